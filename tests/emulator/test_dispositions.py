"""Outcomes a client settles itself (pre-settled dispositions), with the unmodified sync SDK.

A PEEK_LOCK receiver without prefetch releases, pre-settled, every message that reaches its
link between two ``receive_messages`` calls (``enhanced_message_received`` in the SDK's
``_transport/_pyamqp_transport.py``: "release messages when they're received"). The broker
must take that outcome at once: the message goes back, in its place, without counting a
delivery. Ignored, it stays locked for the entity's whole lock duration, its expiry counts as
a delivery attempt, and multi-hop replication stalls for minutes.
"""

from __future__ import annotations

import time

import pytest

pytest.importorskip("proton", reason="the emulator needs python-qpid-proton")

from azure.servicebus import ServiceBusClient, ServiceBusMessage

from emulator import run_emulator

pytestmark = pytest.mark.emulator  # serves the emulator (tests/conftest.py)

CONFIG = {
    "UserConfig": {
        "Namespaces": [
            {"Name": "settle", "Queues": [{"Name": "q", "Properties": {"LockDuration": "PT1M"}}]}
        ]
    }
}


def test_messages_released_by_an_idle_receiver_come_back_at_once_in_order() -> None:
    with (
        run_emulator(CONFIG) as running,
        ServiceBusClient.from_connection_string(running.connection_string("settle")) as client,
        client.get_queue_receiver("q") as receiver,
    ):
        # Credit for ten is left on the link after this empty receive...
        assert receiver.receive_messages(max_message_count=10, max_wait_time=0.5) == []
        with client.get_queue_sender("q") as sender:
            sender.send_messages([ServiceBusMessage(f"m{i}") for i in range(5)])
        # ...so the messages reach the idle receiver, which releases them (its keep-alive
        # listens every 5 s while no receive call is active).
        time.sleep(6)
        received = receiver.receive_messages(max_message_count=10, max_wait_time=5)
        for message in received:
            receiver.complete_message(message)
    assert [str(m) for m in received] == [f"m{i}" for i in range(5)]
    assert [m.delivery_count for m in received] == [0] * 5

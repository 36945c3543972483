"""All-active replication between two emulated regions, end to end.

The local host runs both tasks of ``examples/two-region-all-active.json`` with real SDK
receivers and senders against the emulator, whose subscriptions carry the loop-prevention rule.
Every message published in either region must arrive exactly once in both regions' ``billing``
subscriptions, and no replica may come back.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from azure.servicebus import ServiceBusClient, ServiceBusMessage

from replication.hosts.local import LocalHost
from replication.properties import REPL_ORIGIN, REPL_PATH, REPLICATION_FLAG
from replication.topology import load_topology
from replication.transport.servicebus import envelope_from_received

pytestmark = pytest.mark.emulator

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "two-region-all-active.json"


def _drain(client: ServiceBusClient, topic: str, subscription: str) -> list[Any]:
    envelopes = []
    with client.get_subscription_receiver(topic, subscription, max_wait_time=2) as receiver:
        while batch := receiver.receive_messages(max_message_count=100, max_wait_time=2):
            for message in batch:
                envelopes.append(envelope_from_received(message))
                receiver.complete_message(message)
    return envelopes


def test_two_region_all_active_delivers_everything_once_everywhere(regions: Any) -> None:
    environ = {
        "SB_WEU": regions.connection_string("weu"),
        "SB_NEU": regions.connection_string("neu"),
    }
    clients = {
        name: ServiceBusClient.from_connection_string(environ[f"SB_{name.upper()}"])
        for name in ("weu", "neu")
    }
    published = {name: [f"{name}-{i}" for i in range(5)] for name in clients}
    for name, client in clients.items():
        with client.get_topic_sender("orders") as sender:
            sender.send_messages(
                [
                    ServiceBusMessage(b"{}", message_id=m, application_properties={"n": i})
                    for i, m in enumerate(published[name])
                ]
            )
    with LocalHost(load_topology(EXAMPLE), environ) as host:
        assert host.wait_until_idle(idle_seconds=4, timeout=90)
    everything = sorted(published["weu"] + published["neu"])
    for name, client in clients.items():
        with client:
            received = _drain(client, "orders", "billing")
        assert Counter(e.message_id for e in received) == Counter(everything), name
        for envelope in received:
            local = envelope.message_id.startswith(name)
            properties = envelope.application_properties
            if local:
                assert REPL_ORIGIN not in properties
            else:
                peer = "neu" if name == "weu" else "weu"
                assert properties[REPL_ORIGIN] == peer
                assert properties[REPL_PATH] == f"{peer};{name}"
                assert properties[REPLICATION_FLAG] == 1
    assert sum(stats.messages for stats in host.stats.values()) == 10

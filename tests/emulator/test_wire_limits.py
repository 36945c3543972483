"""What the SDKs' own concurrency puts on one connection, with the unmodified async SDK."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

pytest.importorskip("proton", reason="the emulator needs python-qpid-proton")

from azure.servicebus import ServiceBusMessage
from azure.servicebus.aio import ServiceBusClient

from emulator import run_emulator

pytestmark = pytest.mark.emulator  # serves the emulator (tests/conftest.py)

CONFIG = {"UserConfig": {"Namespaces": [{"Name": "wire", "Queues": [{"Name": "q"}]}]}}


async def _send_concurrently_and_drain(connection: str, count: int) -> list[str]:
    async with ServiceBusClient.from_connection_string(connection) as client:
        async with client.get_queue_sender("q") as sender:
            await asyncio.gather(
                *(sender.send_messages(ServiceBusMessage(f"m{i}")) for i in range(count))
            )
        received: list[str] = []
        async with client.get_queue_receiver("q", max_wait_time=2) as receiver:
            while batch := await receiver.receive_messages(max_message_count=100, max_wait_time=2):
                for message in batch:
                    received.append(str(message))
                    await receiver.complete_message(message)
        return received


def test_fifty_concurrent_sends_on_one_link_do_not_overrun_the_session_window() -> None:
    """Fifty ``send_messages`` in flight at once on one sender (Microsoft's async session-pool
    sample sends twenty): every one is acknowledged and every message arrives. With an incoming
    window of 10 frames the SDK's handler failed."""
    with run_emulator(CONFIG) as running:
        received = asyncio.run(_send_concurrently_and_drain(running.connection_string("wire"), 50))
    assert sorted(received) == sorted(f"m{i}" for i in range(50))


def test_the_sync_sdks_concurrent_lock_renewals_keep_the_connection() -> None:
    """Twenty messages held past two lock durations (PT5S) with the SDK's ``AutoLockRenewer``,
    which renews up to ten locks at once from its threads through one management link and so
    sends transfers with repeated or out-of-order delivery-ids. They all complete: the
    emulator renumbers the ids (emulator/_incoming.py) instead of closing the connection with
    a session sequencing error."""
    from azure.servicebus import AutoLockRenewer, ServiceBusClient

    config = {
        "UserConfig": {
            "Namespaces": [
                {"Name": "renew", "Queues": [{"Name": "q", "Properties": {"LockDuration": "PT5S"}}]}
            ]
        }
    }
    renewer = AutoLockRenewer(max_lock_renewal_duration=60)
    with (
        run_emulator(config) as running,
        ServiceBusClient.from_connection_string(running.connection_string("renew")) as client,
    ):
        with client.get_queue_sender("q") as sender:
            sender.send_messages([ServiceBusMessage(f"m{i}") for i in range(20)])
        with client.get_queue_receiver("q", auto_lock_renewer=renewer, max_wait_time=3) as receiver:
            held: list[Any] = []
            while len(held) < 20:
                batch = receiver.receive_messages(max_message_count=20, max_wait_time=3)
                assert batch, "fewer than 20 messages arrived"
                held += batch
            time.sleep(12)
            for message in held:
                receiver.complete_message(message)
        renewer.close()
    assert sorted(str(m) for m in held) == sorted(f"m{i}" for i in range(20))

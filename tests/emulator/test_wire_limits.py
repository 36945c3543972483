"""What the SDKs' own concurrency puts on one connection, with the unmodified async SDK."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("proton", reason="the emulator needs python-qpid-proton")

from azure.servicebus import ServiceBusMessage
from azure.servicebus.aio import ServiceBusClient

from emulator import run_emulator

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

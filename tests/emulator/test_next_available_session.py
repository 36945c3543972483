"""A next-available session receiver of the async SDK when no session is free, over the wire.

Service Bus answers such an attach, once the receiver's own timeout has passed, the way
Microsoft.Azure.Amqp answers every link whose opening failed (``AmqpLink.OnLinkOpenFailed``:
an attach naming no source or target, then a detach with the error, here
``com.microsoft:timeout``; a Service Bus frame trace shows exactly that, see
``emulator._links.refuse``). The SDK then never counts the link as attached: its open raises
``OperationTimeoutError`` (``_ERROR_CODE_TO_ERROR_MAPPING`` in
``_transport/_pyamqp_transport.py``; ``_do_retryable_operation`` adds the hint about
NEXT_AVAILABLE_SESSION), which is how Microsoft's ``session_pool_receive_async.py`` sample
knows that every session is drained. An attach that echoed the source instead counted as
attached: the receiver opened with no session (``locked_until_utc`` unset, the SDK's attach
callback failing on the missing properties) and ``AutoLockRenewer.register`` raised
``ValueError``.

That sample authenticates with Entra ID (``DefaultAzureCredential``), so the samples tier cannot
run it unmodified (``tests/samples/catalog.py``); the second test here is its scenario with a
connection string. The clients use ``retry_total=0``: the SDK retries a timed-out open three
times with back-off (``OperationTimeoutError`` is retryable), which is the client's behaviour,
not the server's, and only makes each timeout take about twenty seconds instead of one.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("proton", reason="the emulator needs python-qpid-proton")

from azure.servicebus import NEXT_AVAILABLE_SESSION, ServiceBusMessage
from azure.servicebus.aio import AutoLockRenewer, ServiceBusClient
from azure.servicebus.exceptions import OperationTimeoutError

from emulator import run_emulator

pytestmark = pytest.mark.emulator

SESSION_QUEUE = {"RequiresSession": True, "LockDuration": "PT30S"}
CONFIG: dict[str, Any] = {
    "UserConfig": {
        "Namespaces": [
            {
                "Name": "pool",
                "Queues": [
                    {"Name": "empty", "Properties": SESSION_QUEUE},
                    {"Name": "jobs", "Properties": SESSION_QUEUE},
                ],
            }
        ]
    }
}
ATTACH_CALLBACK_FAILED = "Callback for link attach raised error"
"""What the SDK logs (``_pyamqp/aio/_link_async.py``) when an attach lacks what it reads."""


@pytest.fixture(scope="module")
def connection() -> Iterator[str]:
    with run_emulator(CONFIG) as running:
        yield running.connection_string("pool")


def test_the_open_fails_with_operation_timeout_when_no_session_is_free(
    connection: str, caplog: pytest.LogCaptureFixture
) -> None:
    async def open_receiver() -> None:
        async with (
            ServiceBusClient.from_connection_string(connection, retry_total=0) as client,
            client.get_queue_receiver("empty", session_id=NEXT_AVAILABLE_SESSION, max_wait_time=1),
        ):
            pass

    with caplog.at_level(logging.WARNING), pytest.raises(OperationTimeoutError) as raised:
        asyncio.run(open_receiver())
    assert "com.microsoft:timeout" in str(raised.value)
    assert not [r for r in caplog.records if ATTACH_CALLBACK_FAILED in r.getMessage()]


def test_a_pool_of_async_receivers_drains_every_session_then_times_out(connection: str) -> None:
    """Microsoft's ``session_pool_receive_async.py``: concurrent next-available receivers, each
    with an ``AutoLockRenewer`` and session state, until no session is left."""
    sessions = [f"session-{n}" for n in range(3)]
    bodies = [f"message {i}" for i in range(5)]

    async def worker(client: ServiceBusClient, received: dict[str, list[str]]) -> None:
        while True:
            try:
                async with client.get_queue_receiver(
                    "jobs", session_id=NEXT_AVAILABLE_SESSION, max_wait_time=1
                ) as receiver:
                    session = receiver.session
                    assert session.locked_until_utc is not None
                    renewer = AutoLockRenewer()
                    renewer.register(receiver, session)
                    await session.set_state("OPEN")
                    async for message in receiver:
                        await receiver.complete_message(message)
                        received.setdefault(session.session_id, []).append(str(message))
                        if str(message) == "shutdown":
                            await session.set_state("CLOSED")
                            break
                    await renewer.close()
            except OperationTimeoutError:
                return

    async def scenario() -> dict[str, list[str]]:
        received: dict[str, list[str]] = {}
        async with ServiceBusClient.from_connection_string(connection, retry_total=0) as client:
            async with client.get_queue_sender("jobs") as sender:
                for session_id in sessions:
                    await asyncio.gather(
                        *(
                            sender.send_messages(ServiceBusMessage(body, session_id=session_id))
                            for body in bodies
                        )
                    )
                    await sender.send_messages(ServiceBusMessage("shutdown", session_id=session_id))
            await asyncio.gather(*(worker(client, received) for _ in sessions))
        return received

    received = asyncio.run(scenario())
    assert sorted(received) == sessions
    for session_id in sessions:
        # Concurrent sends land in any order; each message once, shutdown last (sent last).
        assert sorted(received[session_id][:-1]) == bodies
        assert received[session_id][-1] == "shutdown"

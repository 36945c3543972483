"""One contract over both emulator brokers: what the Service Bus and the Event Hubs handler do
alike (``emulator._handler.BrokerHandler``).

Each behaviour is written once in :class:`HandlerContract` and run against both brokers by a
subclass that says only where to send and read (kombu's integration mixins, one per broker).
The wire-level checks use python-qpid-proton's own blocking client, a real AMQP 1.0 client
that is neither SDK, so they see the frames as the brokers write them and hold both to the
same answer; the SDK-level behaviour of each broker is tested with its SDK elsewhere
(``tests/e2e/test_emulator*.py``). The snapshot checks call the handler protocol directly.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

pytest.importorskip("proton", reason="the emulator needs python-qpid-proton")

from proton import Delivery, Message, Terminus
from proton.reactor import Selector
from proton.utils import BlockingConnection, LinkDetached

from emulator import RunningEmulator, run_emulator
from emulator._handler import BrokerHandler
from emulator._namespaces import namespace_handlers

pytestmark = pytest.mark.emulator

CONFIG: dict[str, Any] = {
    "UserConfig": {
        "Namespaces": [{"Name": "bus", "Queues": [{"Name": "orders"}]}],
        "NamespaceConfig": [
            {
                "Type": "EventHub",
                "Name": "hubs",
                "Entities": [{"Name": "telemetry", "PartitionCount": 1, "ConsumerGroups": []}],
            }
        ],
    }
}
FROM_THE_START = Selector("amqp.annotation.x-opt-offset > '-1'")
"""An Event Hubs start position (the SDKs' filter); Service Bus receivers ignore it."""
TIMEOUT = 10


@pytest.fixture(scope="module")
def running() -> Iterator[RunningEmulator]:
    with run_emulator(CONFIG) as emulator:
        yield emulator


def _connect(running: RunningEmulator, namespace: str) -> BlockingConnection:
    return BlockingConnection(
        f"amqp://127.0.0.1:{running.port(namespace)}",
        timeout=TIMEOUT,
        allowed_mechs="ANONYMOUS",
    )


def _handler(namespace: str) -> BrokerHandler:
    """A fresh handler for ``namespace`` of :data:`CONFIG`, as the emulator builds it."""
    (handler,) = [h for name, h, _ in namespace_handlers(CONFIG) if name == namespace]
    return handler


class HandlerContract:
    """What every broker handler does; subclasses name the broker's addresses."""

    namespace: ClassVar[str]
    send_address: ClassVar[str]
    receive_address: ClassVar[str]
    status_key: ClassVar[str]
    """The management reply's status property, as the broker's SDK reads it."""

    def test_a_message_comes_back_with_its_body_id_and_typed_properties(
        self, running: RunningEmulator
    ) -> None:
        connection = _connect(running, self.namespace)
        try:
            receiver = connection.create_receiver(self.receive_address, options=FROM_THE_START)
            sender = connection.create_sender(self.send_address)
            marker = str(uuid.uuid4())
            sender.send(Message(body=b"payload", id=marker, properties={"n": 7, "s": "text"}))
            while True:
                received = receiver.receive(timeout=TIMEOUT)
                receiver.accept()
                if received.id == marker:
                    break
        finally:
            connection.close()
        assert bytes(received.body) == b"payload"
        assert received.properties == {"n": 7, "s": "text"}
        assert type(received.properties["n"]) is int

    @pytest.mark.parametrize("role", ["receiver", "sender"])
    def test_an_unknown_entity_is_refused_with_no_terminus_and_the_connection_serves_on(
        self, running: RunningEmulator, role: str
    ) -> None:
        """The refusal is Microsoft.Azure.Amqp's: an attach naming no source or target, then
        a detach with ``amqp:not-found`` (see ``emulator._links.refuse``)."""
        connection = _connect(running, self.namespace)
        try:
            attach = connection.create_receiver if role == "receiver" else connection.create_sender
            with pytest.raises(LinkDetached) as refused:
                attach("no-such-entity")
            link = refused.value.link
            assert link.remote_condition.name == "amqp:not-found"
            assert link.remote_source.type == Terminus.UNSPECIFIED
            assert link.remote_target.type == Terminus.UNSPECIFIED
            delivery = connection.create_sender(self.send_address).send(Message(body=b"on"))
            assert delivery.remote_state == Delivery.ACCEPTED
        finally:
            connection.close()

    def test_an_oversized_message_is_rejected_and_its_link_stays_usable(
        self, running: RunningEmulator
    ) -> None:
        limit = _handler(self.namespace).max_message_size
        connection = _connect(running, self.namespace)
        try:
            sender = connection.create_sender(self.send_address)
            too_big = sender.send(Message(body=b"x" * (limit + 1)), error_states=[])
            assert too_big.remote_state == Delivery.REJECTED
            assert too_big.remote.condition.name == "amqp:link:message-size-exceeded"
            fits = sender.send(Message(body=b"x" * 1024))
            assert fits.remote_state == Delivery.ACCEPTED
        finally:
            connection.close()

    def test_a_management_reply_is_correlated_and_carries_its_status(
        self, running: RunningEmulator
    ) -> None:
        """An unknown request (Service Bus has no READ; Event Hubs has no such hub) fails with
        a 4xx status under the broker's own key, on the reply link, correlated."""
        connection = _connect(running, self.namespace)
        try:
            replies = connection.create_receiver("$management")
            requests = connection.create_sender("$management")
            request_id = str(uuid.uuid4())
            requests.send(
                Message(
                    id=request_id,
                    properties={
                        "operation": "READ",
                        "name": "no-such-hub",
                        "type": "com.microsoft:eventhub",
                    },
                )
            )
            reply = replies.receive(timeout=TIMEOUT)
            replies.accept()
        finally:
            connection.close()
        assert reply.correlation_id == request_id
        status = reply.properties[self.status_key]
        assert isinstance(status, int)
        assert 400 <= status < 500

    def test_a_snapshot_restores_into_a_fresh_handler_unchanged(self) -> None:
        handler = _handler(self.namespace)
        path = self.send_address
        for index in range(3):
            message = Message(body=f"m{index}".encode(), id=f"id-{index}", properties={"i": index})
            assert handler.transfer(path, message.encode()) is None
        handler.sweep()
        saved = json.loads(json.dumps(handler.snapshot()))
        restored = _handler(self.namespace)
        restored.restore(saved, "contract")
        assert restored.snapshot() == saved

    def test_an_acknowledged_message_survives_a_restart(self, tmp_path: Path) -> None:
        marker = str(uuid.uuid4())
        with run_emulator(CONFIG, data_dir=tmp_path) as first:
            connection = _connect(first, self.namespace)
            try:
                sent = connection.create_sender(self.send_address).send(
                    Message(body=b"kept", id=marker)
                )
                assert sent.remote_state == Delivery.ACCEPTED
            finally:
                connection.close()
        with run_emulator(CONFIG, data_dir=tmp_path) as second:
            connection = _connect(second, self.namespace)
            try:
                receiver = connection.create_receiver(self.receive_address, options=FROM_THE_START)
                received = receiver.receive(timeout=TIMEOUT)
                receiver.accept()
            finally:
                connection.close()
        assert (received.id, bytes(received.body)) == (marker, b"kept")


class TestServiceBusHandler(HandlerContract):
    namespace = "bus"
    send_address = "orders"
    receive_address = "orders"
    status_key = "statusCode"


class TestEventHubsHandler(HandlerContract):
    namespace = "hubs"
    send_address = "telemetry"
    receive_address = "telemetry/ConsumerGroups/$Default/Partitions/0"
    status_key = "status-code"

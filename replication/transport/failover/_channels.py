"""The SDK side of :mod:`replication.failover`: one namespace's sender or receiver at a time.

The failover publishers and consumers decide *which* namespace to use; these channels do the
talking, each bound to one namespace and entity:

- :class:`ServiceBusPublishChannel` / :class:`AsyncServiceBusPublishChannel` and
  :class:`EventHubPublishChannel` / :class:`AsyncEventHubPublishChannel` send the
  application's own SDK messages (``ServiceBusMessage``, ``EventData``) in as few batches as fit,
  and report failures as :mod:`replication.exceptions` errors with the positions the service had
  already accepted (:func:`replication.transport.errors.translate`), so that a retry on another
  namespace resends only the rest.
- :class:`ServiceBusConsumeChannel` / :class:`AsyncServiceBusConsumeChannel` receive (peek-lock,
  no prefetch: a message prefetched from a namespace the client is leaving would stay locked
  there) and settle.
- :func:`message_facts` / :func:`event_facts` read what the skip helper needs from a received
  message: MessageId, application properties with text keys, enqueue time, sequence number.

The SDK clients retry once by themselves (:data:`CLIENT_RETRIES`): riding out an outage, and
deciding when to give up on a namespace, is the publisher's unavailability window, which an SDK
retrying for half a minute per call would overrun.

**Deadlines.** Every SDK call of a sync channel runs on the channel's
:class:`~replication.transport.deadlines.CallLane` and is waited for at most its deadline: a send
its ``timeout`` (also given to the SDK, which reports first on an open link), a receive its
``max_wait_time`` plus the channel's ``call_timeout`` (the link may have to open first), a
settlement or a close ``call_timeout`` (default
:data:`~replication.transport.deadlines.DEFAULT_CALL_TIMEOUT`, 10 s). An asyncio channel awaits
each call within the same deadlines (:func:`~replication.transport.deadlines.within`). A call past
its deadline raises :class:`~replication.exceptions.CallTimeoutError` (a send: a
:class:`~replication.exceptions.TransientForwardError` carrying it) and leaves the channel
:attr:`broken`: every later call fails at once, and its owner makes a new channel (the old
client is closed when the overdue call returns).
"""

from __future__ import annotations

import contextlib
import dataclasses
import uuid
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

from azure.eventhub import EventData, EventHubProducerClient
from azure.eventhub.aio import EventHubProducerClient as AsyncEventHubProducerClient
from azure.servicebus import ServiceBusClient, ServiceBusMessage, ServiceBusReceivedMessage
from azure.servicebus.aio import ServiceBusClient as AsyncServiceBusClient
from azure.servicebus.exceptions import MessageSizeExceededError

from replication.envelope import PropertyValue
from replication.exceptions import CallTimeoutError, ForwardError, PermanentForwardError

from .._properties import decode_properties
from ..connections import NamespaceAccess, event_hub_client_from, servicebus_client_from
from ..deadlines import DEFAULT_CALL_TIMEOUT, SDK_GRACE, CallLane, progress, within
from ..errors import translate
from ..servicebus import entity_receiver

CLIENT_RETRIES: dict[str, Any] = {"retry_total": 1, "retry_backoff_factor": 0.2}
"""One quick SDK retry (a dropped connection is re-opened at once); longer outages are the
failover publisher's business."""

DEFAULT_CALL_SECONDS = DEFAULT_CALL_TIMEOUT.total_seconds()

Message = TypeVar("Message")
Result = TypeVar("Result")

OutgoingMessage = ServiceBusMessage | EventData
"""What a failover publisher sends: the application's own SDK messages."""
ReceivedMessage = ServiceBusReceivedMessage
"""What a Service Bus failover consumer hands the application."""


def new_message(kind: str, body: bytes, message_id: str) -> OutgoingMessage:
    """A message to publish: a ``ServiceBusMessage`` (``kind`` ``servicebus``) or an
    ``EventData`` (``eventhubs``) with ``message_id`` (for code that imports no SDK)."""
    if kind == "eventhubs":
        event = EventData(body)
        event.message_id = message_id
        return event
    return ServiceBusMessage(body, message_id=message_id)


@dataclasses.dataclass(frozen=True, slots=True)
class MessageFacts:
    """What the skip helper reads from a received message or event."""

    message_id: str | None
    properties: Mapping[str, PropertyValue]
    enqueued_time: datetime | None
    sequence: int | None


def message_facts(message: ServiceBusReceivedMessage) -> MessageFacts:
    """The facts of a received Service Bus message."""
    return MessageFacts(
        message_id=_text(message.message_id),
        properties=_properties(message.application_properties),
        enqueued_time=message.enqueued_time_utc,
        sequence=message.sequence_number,
    )


def event_facts(event: EventData) -> MessageFacts:
    """The facts of a received event."""
    return MessageFacts(
        message_id=_text(event.message_id),
        properties=_properties(event.properties),
        enqueued_time=event.enqueued_time,
        sequence=event.sequence_number,
    )


def _text(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", errors="replace")
    return str(value)


def _properties(properties: Mapping[Any, Any] | None) -> Mapping[str, PropertyValue]:
    try:
        return decode_properties(properties or {})
    except Exception:  # a property the library cannot read must not hide the message
        return {}


def ensure_message_id(message: ServiceBusMessage | EventData) -> str:
    """The message's MessageId, after giving it a new random one when it had none (so that
    a copy sent again, to this namespace or another, is recognisably the same message)."""
    if not message.message_id:
        message.message_id = str(uuid.uuid4())
    return str(message.message_id)


def _access(access: str | NamespaceAccess) -> NamespaceAccess:
    return NamespaceAccess(connection_string=access) if isinstance(access, str) else access


def servicebus_client(access: str | NamespaceAccess, **options: Any) -> ServiceBusClient:
    """A Service Bus client from a connection string or identity-based access."""
    return servicebus_client_from(_access(access), **options)


def async_servicebus_client(access: str | NamespaceAccess, **options: Any) -> AsyncServiceBusClient:
    """The asyncio Service Bus client (an async credential is needed for identity access)."""
    resolved = _access(access)
    if resolved.connection_string:
        return AsyncServiceBusClient.from_connection_string(resolved.connection_string, **options)
    host, credential = resolved.token_access()
    return AsyncServiceBusClient(host, credential, **options)  # type: ignore[arg-type]


def event_hub_client(
    client_class: Any, access: str | NamespaceAccess, hub: str, **options: Any
) -> Any:
    """A producer or consumer client (sync or async ``client_class``) for one event hub."""
    return event_hub_client_from(client_class, _access(access), hub, **options)


def _too_large(message_id: object, index: int, label: str, acknowledged: set[int]) -> ForwardError:
    error = PermanentForwardError(
        f"message {message_id} exceeds the maximum message size",
        target=label,
        acknowledged=frozenset(acknowledged),
        culprit=index,
    )
    error.reason = "MessageSizeExceeded"
    return error


def _plan(
    messages: Sequence[Message],
    add: Callable[[Any, Message], None],
    overflow: type[Exception],
    label: str,
    acknowledged: set[int],
) -> Generator[tuple[Any, list[int]] | None, Any, None]:
    """The batching of ``messages``, as a conversation with a sync or async driver: it yields
    None to be sent a new empty batch, and (batch, positions) for that batch to be sent, each
    as full as the SDK allows. A message that fits no empty batch raises a permanent error
    naming it."""
    batch = yield None
    members: list[int] = []
    for index, message in enumerate(messages):
        try:
            add(batch, message)
            members.append(index)
            continue
        except overflow:
            if not members:
                raise _too_large(_message_id(message), index, label, acknowledged) from None
        yield batch, members
        batch = yield None
        members = []
        try:
            add(batch, message)
        except overflow:
            raise _too_large(_message_id(message), index, label, acknowledged) from None
        members.append(index)
    if members:
        yield batch, members


def _message_id(message: object) -> object:
    return getattr(message, "message_id", None)


def send_in_batches(
    messages: Sequence[Message],
    *,
    new_batch: Callable[[], Any],
    add: Callable[[Any, Message], None],
    send: Callable[[Any], None],
    overflow: type[Exception],
    label: str,
    acknowledged: set[int] | None = None,
) -> None:
    """Send ``messages`` in order in as few batches as fit; ``acknowledged`` (when given)
    collects the positions accepted so far, also for a caller that stopped waiting. Each batch
    sent counts as :func:`~replication.transport.deadlines.progress` of a call on a lane.

    Raises:
        ForwardError: translated from the SDK's error, with the positions already accepted.
    """
    acknowledged = set() if acknowledged is None else acknowledged
    try:
        plan = _plan(messages, add, overflow, label, acknowledged)
        request = next(plan)
        while True:
            if request is None:
                request = plan.send(new_batch())
            else:
                send(request[0])
                acknowledged.update(request[1])
                progress()
                request = next(plan)
    except StopIteration:
        return
    except ForwardError:
        raise
    except Exception as error:
        raise translate(error, target=label, acknowledged=frozenset(acknowledged)) from error


async def send_in_batches_async(
    messages: Sequence[Message],
    *,
    new_batch: Callable[[], Awaitable[Any]],
    add: Callable[[Any, Message], None],
    send: Callable[[Any], Awaitable[object]],
    overflow: type[Exception],
    label: str,
) -> None:
    """:func:`send_in_batches` with the asyncio clients (each call bounded by its caller)."""
    acknowledged: set[int] = set()
    try:
        plan = _plan(messages, add, overflow, label, acknowledged)
        request = next(plan)
        while True:
            if request is None:
                request = plan.send(await new_batch())
            else:
                await send(request[0])
                acknowledged.update(request[1])
                request = next(plan)
    except StopIteration:
        return
    except ForwardError:
        raise
    except Exception as error:
        raise translate(error, target=label, acknowledged=frozenset(acknowledged)) from error


def _no_partition_key(partition_key: str | None) -> None:
    if partition_key is not None:
        raise ValueError("a Service Bus message carries its partition key: set it on the message")


class _Lane:
    """The calls of one sync channel: on one :class:`CallLane`, broken once one overran."""

    def __init__(self, label: str, endpoint: str, call_timeout: float) -> None:
        self.label = label
        self.call_timeout = call_timeout
        self.broken = False
        self._lane = CallLane(endpoint, name=f"sdk {label}")

    def run(self, call: Callable[[], Result], *, timeout: float, what: str) -> Result:
        if self.broken:
            raise CallTimeoutError(
                f"{self.label}: {what}: this connection was given up after a call got no answer"
            )
        try:
            return self._lane.run(call, timeout=timeout, what=f"{self.label} {what}")
        except CallTimeoutError:
            self.broken = True
            raise

    def send(self, send: Callable[[set[int]], None], *, timeout: float) -> None:
        """``send(acknowledged)`` on the lane; its failure translated with the positions it had
        acknowledged (also when the lane stopped waiting for it)."""
        acknowledged: set[int] = set()
        try:
            self.run(lambda: send(acknowledged), timeout=timeout, what="send")
        except ForwardError:
            raise
        except Exception as error:
            raise translate(
                error, target=self.label, acknowledged=frozenset(acknowledged)
            ) from error

    def close(self, closer: Callable[[], object]) -> None:
        """Close the client on the lane after whatever runs there; wait for it only while the
        channel works."""
        self._lane.retire(closer, wait=0.0 if self.broken else self.call_timeout)


class _AsyncLane:
    """The calls of one asyncio channel, each awaited within its deadline; broken once one
    overran (the call was cancelled, the client's state is unknown)."""

    def __init__(self, label: str, call_timeout: float) -> None:
        self.label = label
        self.call_timeout = call_timeout
        self.broken = False

    async def run(self, call: Awaitable[Result], *, timeout: float, what: str) -> Result:
        if self.broken:
            if hasattr(call, "close"):
                call.close()  # a coroutine never awaited
            raise CallTimeoutError(
                f"{self.label}: {what}: this connection was given up after a call got no answer"
            )
        try:
            return await within(call, timeout=timeout, what=f"{self.label} {what}")
        except CallTimeoutError:
            self.broken = True
            raise

    async def close(self, *closers: Callable[[], Awaitable[object]]) -> None:
        for closer in closers:
            with contextlib.suppress(Exception):
                await within(closer(), timeout=self.call_timeout, what=f"{self.label} close")


def _send_timeout(timeout: float | None, call_timeout: float) -> tuple[float, float]:
    """(the SDK's timeout, the lane's deadline) of one send."""
    sdk = call_timeout if timeout is None else timeout
    return sdk, sdk + SDK_GRACE


class ServiceBusPublishChannel:
    """Sends the application's ``ServiceBusMessage`` objects to one queue or topic."""

    def __init__(
        self,
        access: str | NamespaceAccess,
        entity: str,
        *,
        label: str,
        call_timeout: float = DEFAULT_CALL_SECONDS,
    ) -> None:
        self.label = label
        self._client = servicebus_client(access, **CLIENT_RETRIES)
        self._sender = self._client.get_queue_sender(entity)
        self._lane = _Lane(label, self._client.fully_qualified_namespace, call_timeout)

    @property
    def broken(self) -> bool:
        """True once a call got no answer in time: make a new channel."""
        return self._lane.broken

    def send(
        self,
        messages: Sequence[ServiceBusMessage],
        *,
        timeout: float | None,
        partition_key: str | None = None,
    ) -> None:
        _no_partition_key(partition_key)
        sdk_timeout, deadline = _send_timeout(timeout, self._lane.call_timeout)

        def send(acknowledged: set[int]) -> None:
            if len(messages) == 1:  # no batch to build: a third less time per message, measured
                self._sender.send_messages(messages[0], timeout=sdk_timeout)
                return
            send_in_batches(
                messages,
                new_batch=self._sender.create_message_batch,
                add=lambda batch, message: batch.add_message(message),
                send=lambda batch: self._sender.send_messages(batch, timeout=sdk_timeout),
                overflow=MessageSizeExceededError,
                label=self.label,
                acknowledged=acknowledged,
            )

        self._lane.send(send, timeout=deadline)

    def close(self) -> None:
        def close() -> None:
            try:
                self._sender.close()
            finally:
                self._client.close()

        self._lane.close(close)


class AsyncServiceBusPublishChannel:
    """:class:`ServiceBusPublishChannel` with the asyncio client."""

    def __init__(
        self,
        access: str | NamespaceAccess,
        entity: str,
        *,
        label: str,
        call_timeout: float = DEFAULT_CALL_SECONDS,
    ) -> None:
        self.label = label
        self._client = async_servicebus_client(access, **CLIENT_RETRIES)
        self._sender = self._client.get_queue_sender(entity)
        self._lane = _AsyncLane(label, call_timeout)

    @property
    def broken(self) -> bool:
        """See :attr:`ServiceBusPublishChannel.broken`."""
        return self._lane.broken

    async def send(
        self,
        messages: Sequence[ServiceBusMessage],
        *,
        timeout: float | None,
        partition_key: str | None = None,
    ) -> None:
        _no_partition_key(partition_key)
        sdk_timeout, deadline = _send_timeout(timeout, self._lane.call_timeout)

        def bounded(call: Awaitable[Result]) -> Awaitable[Result]:
            return self._lane.run(call, timeout=deadline, what="send")

        if len(messages) == 1:  # see ServiceBusPublishChannel.send
            try:
                await bounded(self._sender.send_messages(messages[0], timeout=sdk_timeout))
            except Exception as error:
                raise translate(error, target=self.label) from error
            return
        await send_in_batches_async(
            messages,
            new_batch=lambda: bounded(self._sender.create_message_batch()),
            add=lambda batch, message: batch.add_message(message),
            send=lambda batch: bounded(self._sender.send_messages(batch, timeout=sdk_timeout)),
            overflow=MessageSizeExceededError,
            label=self.label,
        )

    async def close(self) -> None:
        await self._lane.close(self._sender.close, self._client.close)


class EventHubPublishChannel:
    """Sends the application's ``EventData`` to one event hub, all with one partition key
    (None: the service spreads them)."""

    def __init__(
        self,
        access: str | NamespaceAccess,
        hub: str,
        *,
        label: str,
        call_timeout: float = DEFAULT_CALL_SECONDS,
    ) -> None:
        self.label = label
        self._producer = event_hub_client(EventHubProducerClient, access, hub, **CLIENT_RETRIES)
        self._lane = _Lane(label, endpoint_of(self._producer), call_timeout)

    @property
    def broken(self) -> bool:
        """See :attr:`ServiceBusPublishChannel.broken`."""
        return self._lane.broken

    def send(
        self,
        messages: Sequence[EventData],
        *,
        timeout: float | None,
        partition_key: str | None = None,
    ) -> None:
        sdk_timeout, deadline = _send_timeout(timeout, self._lane.call_timeout)

        def send(acknowledged: set[int]) -> None:
            send_in_batches(
                messages,
                new_batch=lambda: self._producer.create_batch(partition_key=partition_key),
                add=lambda batch, event: batch.add(event),
                send=lambda batch: self._producer.send_batch(batch, timeout=sdk_timeout),
                # EventDataBatch.add reports "too large for the batch" as ValueError.
                overflow=ValueError,
                label=self.label,
                acknowledged=acknowledged,
            )

        self._lane.send(send, timeout=deadline)

    def close(self) -> None:
        self._lane.close(self._producer.close)


class AsyncEventHubPublishChannel:
    """:class:`EventHubPublishChannel` with the asyncio client."""

    def __init__(
        self,
        access: str | NamespaceAccess,
        hub: str,
        *,
        label: str,
        call_timeout: float = DEFAULT_CALL_SECONDS,
    ) -> None:
        self.label = label
        self._producer = event_hub_client(
            AsyncEventHubProducerClient, access, hub, **CLIENT_RETRIES
        )
        self._lane = _AsyncLane(label, call_timeout)

    @property
    def broken(self) -> bool:
        """See :attr:`ServiceBusPublishChannel.broken`."""
        return self._lane.broken

    async def send(
        self,
        messages: Sequence[EventData],
        *,
        timeout: float | None,
        partition_key: str | None = None,
    ) -> None:
        sdk_timeout, deadline = _send_timeout(timeout, self._lane.call_timeout)

        def bounded(call: Awaitable[Result]) -> Awaitable[Result]:
            return self._lane.run(call, timeout=deadline, what="send")

        await send_in_batches_async(
            messages,
            new_batch=lambda: bounded(self._producer.create_batch(partition_key=partition_key)),
            add=lambda batch, event: batch.add(event),
            send=lambda batch: bounded(self._producer.send_batch(batch, timeout=sdk_timeout)),
            overflow=ValueError,
            label=self.label,
        )

    async def close(self) -> None:
        await self._lane.close(self._producer.close)


class ServiceBusConsumeChannel:
    """Peek-lock receives from one queue, or one topic subscription, of one namespace."""

    def __init__(
        self,
        access: str | NamespaceAccess,
        entity: str,
        subscription: str | None,
        *,
        label: str,
        call_timeout: float = DEFAULT_CALL_SECONDS,
    ) -> None:
        self.label = label
        self._opened = False
        self._client = servicebus_client(access, **CLIENT_RETRIES)
        self._receiver = entity_receiver(self._client, entity, subscription)
        self._lane = _Lane(label, self._client.fully_qualified_namespace, call_timeout)

    @property
    def broken(self) -> bool:
        """True once a call got no answer in time: make a new channel (the messages it handed
        out can no longer be settled; their locks expire and the broker delivers them again)."""
        return self._lane.broken

    def receive(
        self, max_message_count: int, max_wait_time: float
    ) -> list[ServiceBusReceivedMessage]:
        def receive() -> list[ServiceBusReceivedMessage]:
            if not self._opened:
                # receive_messages counts opening the link against max_wait_time; a short wait
                # would never get a link open on a slow connection. Entering opens it first.
                self._receiver.__enter__()
                self._opened = True
            return self._receiver.receive_messages(
                max_message_count=max_message_count, max_wait_time=max_wait_time
            )

        return self._lane.run(
            receive, timeout=max_wait_time + self._lane.call_timeout, what="receive"
        )

    def complete(self, message: ServiceBusReceivedMessage) -> None:
        self._lane.run(
            lambda: self._receiver.complete_message(message),
            timeout=self._lane.call_timeout,
            what="complete",
        )

    def abandon(self, message: ServiceBusReceivedMessage) -> None:
        self._lane.run(
            lambda: self._receiver.abandon_message(message),
            timeout=self._lane.call_timeout,
            what="abandon",
        )

    def close(self) -> None:
        def close() -> None:
            try:
                self._receiver.close()
            finally:
                self._client.close()

        self._lane.close(close)


class AsyncServiceBusConsumeChannel:
    """:class:`ServiceBusConsumeChannel` with the asyncio client."""

    def __init__(
        self,
        access: str | NamespaceAccess,
        entity: str,
        subscription: str | None,
        *,
        label: str,
        call_timeout: float = DEFAULT_CALL_SECONDS,
    ) -> None:
        self.label = label
        self._opened = False
        self._client = async_servicebus_client(access, **CLIENT_RETRIES)
        if subscription is None:
            self._receiver = self._client.get_queue_receiver(entity, prefetch_count=0)
        else:
            self._receiver = self._client.get_subscription_receiver(
                entity, subscription, prefetch_count=0
            )
        self._lane = _AsyncLane(label, call_timeout)

    @property
    def broken(self) -> bool:
        """See :attr:`ServiceBusConsumeChannel.broken`."""
        return self._lane.broken

    async def receive(
        self, max_message_count: int, max_wait_time: float
    ) -> list[ServiceBusReceivedMessage]:
        async def receive() -> list[ServiceBusReceivedMessage]:
            if not self._opened:
                await self._receiver.__aenter__()  # see ServiceBusConsumeChannel.receive
                self._opened = True
            return await self._receiver.receive_messages(
                max_message_count=max_message_count, max_wait_time=max_wait_time
            )

        return await self._lane.run(
            receive(), timeout=max_wait_time + self._lane.call_timeout, what="receive"
        )

    async def complete(self, message: ServiceBusReceivedMessage) -> None:
        await self._lane.run(
            self._receiver.complete_message(message),
            timeout=self._lane.call_timeout,
            what="complete",
        )

    async def abandon(self, message: ServiceBusReceivedMessage) -> None:
        await self._lane.run(
            self._receiver.abandon_message(message),
            timeout=self._lane.call_timeout,
            what="abandon",
        )

    async def close(self) -> None:
        await self._lane.close(self._receiver.close, self._client.close)


def endpoint_of(client: Any) -> str:
    """``host:port`` of an Event Hubs client (what the event processor keys checkpoints by
    too), the key that groups calls to one namespace (:mod:`replication.transport.deadlines`)."""
    return str(client._address.hostname)


__all__ = [
    "CLIENT_RETRIES",
    "DEFAULT_CALL_SECONDS",
    "AsyncEventHubPublishChannel",
    "AsyncServiceBusConsumeChannel",
    "AsyncServiceBusPublishChannel",
    "EventHubPublishChannel",
    "MessageFacts",
    "OutgoingMessage",
    "ReceivedMessage",
    "ServiceBusConsumeChannel",
    "ServiceBusPublishChannel",
    "async_servicebus_client",
    "endpoint_of",
    "ensure_message_id",
    "event_facts",
    "event_hub_client",
    "message_facts",
    "new_message",
    "send_in_batches",
    "send_in_batches_async",
    "servicebus_client",
]

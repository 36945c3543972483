"""Failover publishers: send to the active namespace of an entity that exists in several.

:class:`FailoverPublisher` (threads) and :class:`AsyncFailoverPublisher` (asyncio) send the
application's own SDK messages, ``ServiceBusMessage`` to a queue or topic
(:meth:`FailoverPublisher.service_bus`) or ``EventData`` to an event hub
(:meth:`FailoverPublisher.event_hub`), to the namespace :class:`PublisherCore` chooses: the one
the binding store names for the publisher, or the next one when the target has been failing
for the unavailability window (see :mod:`replication.failover._publisher`).

Every message gets a MessageId first if it has none (a random UUID, kept on the message object),
so a copy sent twice (a send whose acknowledgement was lost, then retried here or on another
namespace) is recognisably the same message to duplicate detection and to the consumers' skip
helper. A send returns when every message was accepted by one namespace; messages a namespace
accepted before a failure are not sent again. It raises
:class:`~replication.exceptions.PermanentForwardError` at once for a message no namespace will
take (too large), and :class:`PublishTimeoutError` when nothing accepted the messages within
``send_timeout``.

**Deadlines.** One attempt (one SDK send, its connection opened first if need be) is given
``call_timeout`` (default 10 s, :data:`~replication.transport.deadlines.DEFAULT_CALL_TIMEOUT`),
less when the send's own timeout is nearer; an attempt that gets no answer in time counts as a
failure of that namespace like a refused one (its connection is dropped and made again), and the
unavailability window counts from the start of the first failed attempt. So a publisher whose
namespace hangs sends elsewhere within ``unavailability_window`` plus one ``call_timeout``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any, ClassVar, Protocol, Self

from replication.exceptions import PublishTimeoutError, TransientForwardError
from replication.transport.connections import NamespaceAccess
from replication.transport.deadlines import DEFAULT_CALL_TIMEOUT, seconds
from replication.transport.failover import (
    AsyncEventHubPublishChannel,
    AsyncServiceBusPublishChannel,
    BlobFailoverStore,
    EventHubPublishChannel,
    OutgoingMessage,
    ServiceBusPublishChannel,
    ensure_message_id,
)

from ._bindings import Role
from ._follower import DEFAULT_POLL_INTERVAL, BindingFollower
from ._publisher import DEFAULT_UNAVAILABILITY_WINDOW, PublisherCore, PublisherCounters

logger = logging.getLogger(__name__)

DEFAULT_SEND_TIMEOUT = timedelta(minutes=2)

Access = str | NamespaceAccess


class _SyncChannel(Protocol):
    @property
    def broken(self) -> bool: ...

    def send(
        self, messages: Sequence[Any], *, timeout: float | None, partition_key: str | None = None
    ) -> None: ...

    def close(self) -> None: ...


class _AsyncChannel(Protocol):
    @property
    def broken(self) -> bool: ...

    async def send(
        self, messages: Sequence[Any], *, timeout: float | None, partition_key: str | None = None
    ) -> None: ...

    async def close(self) -> None: ...


def _batch(messages: OutgoingMessage | Sequence[OutgoingMessage]) -> list[OutgoingMessage]:
    batch = list(messages) if isinstance(messages, Sequence) else [messages]
    for message in batch:
        ensure_message_id(message)
    return batch


class _PublisherBase:
    def __init__(
        self,
        core: PublisherCore,
        channel: Callable[[str], Any],
        *,
        kind: str,
        entity: str,
        send_timeout: timedelta = DEFAULT_SEND_TIMEOUT,
        call_timeout: timedelta = DEFAULT_CALL_TIMEOUT,
    ) -> None:
        self._core = core
        self.kind = kind
        self.entity = entity
        self.send_timeout = send_timeout.total_seconds()
        self.call_timeout = seconds(call_timeout)
        self._make_channel = channel
        self._channels: dict[str, Any] = {}

    CHANNELS: ClassVar[dict[str, Callable[..., Any]]] = {}
    """The channel class per kind (``servicebus``, ``eventhubs``) of the sync or async side."""

    @classmethod
    def service_bus(
        cls,
        *,
        app: str,
        entity: str,
        namespaces: Mapping[str, Access],
        store: BlobFailoverStore | None = None,
        instance: str | None = None,
        unavailability_window: timedelta = DEFAULT_UNAVAILABILITY_WINDOW,
        poll_interval: timedelta = DEFAULT_POLL_INTERVAL,
        send_timeout: timedelta = DEFAULT_SEND_TIMEOUT,
        call_timeout: timedelta = DEFAULT_CALL_TIMEOUT,
    ) -> Self:
        """A publisher to the queue or topic ``entity``; ``namespaces`` maps the logical names
        (as in the topology and the binding store, the active one by default first) to
        connection strings or :class:`NamespaceAccess`."""
        return cls._create(
            "servicebus",
            app=app,
            entity=entity,
            namespaces=namespaces,
            store=store,
            instance=instance,
            unavailability_window=unavailability_window,
            poll_interval=poll_interval,
            send_timeout=send_timeout,
            call_timeout=call_timeout,
        )

    @classmethod
    def event_hub(
        cls,
        *,
        app: str,
        entity: str,
        namespaces: Mapping[str, Access],
        store: BlobFailoverStore | None = None,
        instance: str | None = None,
        unavailability_window: timedelta = DEFAULT_UNAVAILABILITY_WINDOW,
        poll_interval: timedelta = DEFAULT_POLL_INTERVAL,
        send_timeout: timedelta = DEFAULT_SEND_TIMEOUT,
        call_timeout: timedelta = DEFAULT_CALL_TIMEOUT,
    ) -> Self:
        """A publisher to the event hub ``entity`` (see :meth:`service_bus`)."""
        return cls._create(
            "eventhubs",
            app=app,
            entity=entity,
            namespaces=namespaces,
            store=store,
            instance=instance,
            unavailability_window=unavailability_window,
            poll_interval=poll_interval,
            send_timeout=send_timeout,
            call_timeout=call_timeout,
        )

    @classmethod
    def _create(
        cls,
        kind: str,
        *,
        app: str,
        entity: str,
        namespaces: Mapping[str, Access],
        store: BlobFailoverStore | None,
        instance: str | None,
        unavailability_window: timedelta,
        poll_interval: timedelta,
        send_timeout: timedelta,
        call_timeout: timedelta,
    ) -> Self:
        follower = BindingFollower(
            store,
            app=app,
            instance=instance,
            entity=entity,
            role=Role.PUBLISH,
            namespaces=list(namespaces),
            poll_interval=poll_interval,
        )
        channel_class = cls.CHANNELS[kind]
        limit = seconds(call_timeout)
        return cls(
            PublisherCore(follower, unavailability_window=unavailability_window),
            lambda name: channel_class(
                namespaces[name], entity, label=f"{name}/{entity}", call_timeout=limit
            ),
            kind=kind,
            entity=entity,
            send_timeout=send_timeout,
            call_timeout=call_timeout,
        )

    @property
    def namespace(self) -> str:
        """The namespace the next send goes to."""
        return self._core.target()

    @property
    def counters(self) -> PublisherCounters:
        return self._core.counters

    @property
    def follower(self) -> BindingFollower:
        """The publisher's view of the binding store (``problem`` says why it is not used)."""
        return self._core.follower

    def _call_timeout(self, deadline: float) -> float:
        """One attempt's deadline: ``call_timeout``, or what is left of the send's own timeout
        (at least a second, or ``call_timeout`` when that is shorter)."""
        floor = min(1.0, self.call_timeout)
        return max(floor, min(self.call_timeout, deadline - time.monotonic()))

    def _timed_out(self, namespace: str, error: BaseException) -> PublishTimeoutError:
        return PublishTimeoutError(
            f"{self.entity}: not accepted within {self.send_timeout:.0f} s; "
            f"last attempt on {namespace}: {error}"
        )


class FailoverPublisher(_PublisherBase):
    """Sends to the active namespace (see the module docstring); safe to share between threads
    (each namespace's SDK sender serializes its sends)."""

    CHANNELS: ClassVar[dict[str, Callable[..., Any]]] = {
        "servicebus": ServiceBusPublishChannel,
        "eventhubs": EventHubPublishChannel,
    }
    _channels: dict[str, _SyncChannel]

    def _channel(self, namespace: str) -> _SyncChannel:
        channel = self._channels.get(namespace)
        if channel is None:
            channel = self._channels[namespace] = self._make_channel(namespace)
        return channel

    def _drop(self, namespace: str) -> None:
        channel = self._channels.pop(namespace, None)
        if channel is not None:
            try:
                channel.close()
            except Exception as error:  # a dead namespace's connection may not close cleanly
                logger.debug("closing the channel to %s: %s", namespace, error)

    def send(
        self,
        messages: OutgoingMessage | Sequence[OutgoingMessage],
        *,
        timeout: timedelta | None = None,
        partition_key: str | None = None,
    ) -> str:
        """Send ``messages`` (in order) to the active namespace; returns the namespace that
        accepted the last of them. ``partition_key``: the events' partition key (event hubs only;
        a Service Bus message carries its own).

        Raises:
            PermanentForwardError: a message no namespace can take (too large).
            PublishTimeoutError: nothing accepted them within ``timeout`` (default
                ``send_timeout``).
        """
        batch = _batch(messages)
        limit = self.send_timeout if timeout is None else timeout.total_seconds()
        deadline = time.monotonic() + limit
        attempt = 0
        while True:
            namespace = self._core.target()
            channel = self._channel(namespace)
            started = time.monotonic()
            try:
                channel.send(
                    batch, timeout=self._call_timeout(deadline), partition_key=partition_key
                )
            except TransientForwardError as error:
                batch = [m for i, m in enumerate(batch) if i not in error.acknowledged]
                if channel.broken:  # no answer in time: a new connection next time
                    self._drop(namespace)
                if self._core.failed(namespace, error, started=started) is not None:
                    self._drop(namespace)
                    attempt = 0
                    continue
                if time.monotonic() >= deadline:
                    raise self._timed_out(namespace, error) from error
                time.sleep(self._core.backoff(attempt))
                attempt += 1
                continue
            self._core.succeeded(namespace)
            return namespace

    def close(self) -> None:
        self._core.follower.close()
        for namespace in list(self._channels):
            self._drop(namespace)

    def __enter__(self) -> FailoverPublisher:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class AsyncFailoverPublisher(_PublisherBase):
    """:class:`FailoverPublisher` for asyncio (the binding store is read in a worker thread)."""

    CHANNELS: ClassVar[dict[str, Callable[..., Any]]] = {
        "servicebus": AsyncServiceBusPublishChannel,
        "eventhubs": AsyncEventHubPublishChannel,
    }
    _channels: dict[str, _AsyncChannel]

    async def _target(self) -> str:
        if self._core.follower.due():
            await asyncio.to_thread(self._core.follower.refresh)
        return self._core.target()

    async def _drop(self, namespace: str) -> None:
        channel = self._channels.pop(namespace, None)
        if channel is not None:
            try:
                await channel.close()
            except Exception as error:
                logger.debug("closing the channel to %s: %s", namespace, error)

    async def send(
        self,
        messages: OutgoingMessage | Sequence[OutgoingMessage],
        *,
        timeout: timedelta | None = None,
        partition_key: str | None = None,
    ) -> str:
        """See :meth:`FailoverPublisher.send`."""
        batch = _batch(messages)
        limit = self.send_timeout if timeout is None else timeout.total_seconds()
        deadline = time.monotonic() + limit
        attempt = 0
        while True:
            namespace = await self._target()
            channel = self._channels.get(namespace)
            if channel is None:
                channel = self._channels[namespace] = self._make_channel(namespace)
            started = time.monotonic()
            try:
                await channel.send(
                    batch, timeout=self._call_timeout(deadline), partition_key=partition_key
                )
            except TransientForwardError as error:
                batch = [m for i, m in enumerate(batch) if i not in error.acknowledged]
                if channel.broken:  # see FailoverPublisher.send
                    await self._drop(namespace)
                if self._core.failed(namespace, error, started=started) is not None:
                    await self._drop(namespace)
                    attempt = 0
                    continue
                if time.monotonic() >= deadline:
                    raise self._timed_out(namespace, error) from error
                await asyncio.sleep(self._core.backoff(attempt))
                attempt += 1
                continue
            self._core.succeeded(namespace)
            return namespace

    async def close(self) -> None:
        self._core.follower.close()
        for namespace in list(self._channels):
            await self._drop(namespace)

    async def __aenter__(self) -> AsyncFailoverPublisher:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()


__all__ = ["AsyncFailoverPublisher", "FailoverPublisher", "PublishTimeoutError"]

"""Failover consumers for Service Bus: the application's receive loop, reading from the active
namespace and skipping what it already processed on another.

:class:`FailoverConsumer` (threads) and :class:`AsyncFailoverConsumer` (asyncio) wrap the loop
an application already writes::

    with FailoverConsumer.service_bus(app="orders-app", entity="orders", subscription="billing",
                                      namespaces={"primary": CS1, "secondary": CS2},
                                      store=FailoverStore.from_connection_string(STORAGE)) as c:
        while running:
            for message in c.receive(max_message_count=50, max_wait_time=1):
                handle(message)
                c.complete(message)

- :meth:`~FailoverConsumer.receive` reads from the namespace the binding store names for this
  consumer (:class:`~replication.failover._follower.BindingFollower`); when that changes it
  settles what it holds on the old namespace and moves. Messages the processed-message log
  knows (:class:`~replication.failover._processed.ProcessedLog`, by MessageId) are completed
  and not returned; :attr:`~FailoverConsumer.counters` counts them, and the messages processed
  although the log could not vouch for them (``unverified``). ``on_skip``, when given, is
  called with each of them before it is completed (an audit of what the helper dropped: the
  showcase counts them as what the subscription held).
- :meth:`~FailoverConsumer.complete` records the message as processed; the settlement itself
  waits until the log entry is durable (:meth:`~FailoverConsumer.checkpoint`, run by the next
  :meth:`receive` and by :meth:`close`), so a completed message is never missing from the
  persisted log. Keep the time between ``receive`` calls well under the entity's lock duration.
- A namespace that cannot be reached does not raise out of ``receive``: it returns no messages
  after ``max_wait_time``, logs a WARNING (once per outage) and tries again on the next call,
  so the loop keeps running until the operator's switch moves it (``python -m replication
  failover``). :attr:`~FailoverConsumer.last_error` says what went wrong.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any, ClassVar, Protocol, Self

from replication.runtime import describe
from replication.transport.connections import NamespaceAccess
from replication.transport.failover import (
    AsyncServiceBusConsumeChannel,
    BlobFailoverStore,
    ReceivedMessage,
    ServiceBusConsumeChannel,
    message_facts,
)

from ._bindings import Role
from ._follower import DEFAULT_POLL_INTERVAL, BindingFollower
from ._origin import OriginPosition, origin_of
from ._processed import DEFAULT_MAX_ENTRIES, DEFAULT_RETENTION, Decision, ProcessedLog
from ._state import ConsumerState

logger = logging.getLogger(__name__)

Access = str | NamespaceAccess


@dataclasses.dataclass(slots=True)
class ConsumerCounters:
    """Messages returned to the application, skipped as already processed, processed although
    unverifiable, namespace switches, and failed receives."""

    received: int = 0
    skipped: int = 0
    unverified: int = 0
    switches: int = 0
    receive_failures: int = 0


class _SyncChannel(Protocol):
    label: str

    def receive(self, max_message_count: int, max_wait_time: float) -> list[ReceivedMessage]: ...

    def complete(self, message: ReceivedMessage) -> None: ...

    def abandon(self, message: ReceivedMessage) -> None: ...

    def close(self) -> None: ...


class _AsyncChannel(Protocol):
    label: str

    async def receive(
        self, max_message_count: int, max_wait_time: float
    ) -> list[ReceivedMessage]: ...

    async def complete(self, message: ReceivedMessage) -> None: ...

    async def abandon(self, message: ReceivedMessage) -> None: ...

    async def close(self) -> None: ...


def client_key(app: str, instance: str | None, entity: str, subscription: str | None) -> str:
    """The name a consumer's state is stored under."""
    return "/".join([app, instance or "_", entity, subscription or "_"])


class _ConsumerBase:
    """What the sync and async consumers share: the decisions, none of the I/O."""

    def __init__(
        self,
        follower: BindingFollower,
        state: ConsumerState,
        channel: Callable[[str], Any],
        *,
        on_skip: Callable[[ReceivedMessage], None] | None = None,
    ) -> None:
        self._make_channel = channel
        self._on_skip = on_skip
        self.follower = follower
        self.state = state
        self.counters = ConsumerCounters()
        self.last_error: str | None = None
        self._namespace: str | None = None
        self._origins: dict[int, tuple[str | None, OriginPosition]] = {}
        self._to_settle: list[ReceivedMessage] = []
        self._failing_since: float | None = None

    CHANNEL: ClassVar[Callable[..., Any]]
    """The channel class of the sync or async side."""

    @classmethod
    def service_bus(
        cls,
        *,
        app: str,
        entity: str,
        namespaces: Mapping[str, Access],
        subscription: str | None = None,
        store: BlobFailoverStore | None = None,
        instance: str | None = None,
        poll_interval: timedelta = DEFAULT_POLL_INTERVAL,
        retention: timedelta = DEFAULT_RETENTION,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        on_skip: Callable[[ReceivedMessage], None] | None = None,
    ) -> Self:
        """A consumer of the queue ``entity`` (or of its ``subscription`` when ``entity`` is a
        topic). Without a ``store`` it stays on the first namespace and keeps its log in memory
        only. ``on_skip`` sees each message the log skips, before it is completed. The sync
        consumer loads its persisted log here (the async one in ``open``); either raises
        :class:`~replication.exceptions.ReplicationError` when the store cannot be read."""
        follower = BindingFollower(
            store,
            app=app,
            instance=instance,
            entity=entity,
            role=Role.CONSUME,
            namespaces=list(namespaces),
            poll_interval=poll_interval,
        )
        log = ProcessedLog(retention=retention, max_entries=max_entries)
        state = ConsumerState(log, store, client_key(app, instance, entity, subscription))
        channel_class = cls.CHANNEL
        return cls(
            follower,
            state,
            lambda name: channel_class(
                namespaces[name], entity, subscription, label=f"{name}/{entity}"
            ),
            on_skip=on_skip,
        )

    @property
    def namespace(self) -> str:
        """The namespace the consumer reads from (or will, on the next receive)."""
        return self._namespace or self.follower.namespaces[0]

    @property
    def log(self) -> ProcessedLog:
        return self.state.log

    def _screen(
        self, namespace: str, messages: list[ReceivedMessage]
    ) -> tuple[list[ReceivedMessage], list[ReceivedMessage]]:
        """(to process, to complete as already processed)."""
        keep: list[ReceivedMessage] = []
        skip: list[ReceivedMessage] = []
        for message in messages:
            facts = message_facts(message)
            origin = origin_of(
                facts.properties,
                namespace=namespace,
                enqueued_time=facts.enqueued_time,
                sequence=facts.sequence,
            )
            decision: Decision = self.log.decide(facts.message_id, origin)
            if decision.skip:
                self.counters.skipped += 1
                if self._on_skip is not None:
                    self._on_skip(message)
                skip.append(message)
                continue
            if decision.unverified:
                self.counters.unverified += 1
            self.counters.received += 1
            self._origins[id(message)] = (facts.message_id, origin)
            keep.append(message)
        return keep, skip

    def _record(self, message: ReceivedMessage) -> None:
        message_id, origin = self._origins.pop(id(message), (None, None))
        if origin is None:
            raise ValueError("complete() takes a message this consumer's receive() returned")
        self.log.record(message_id, origin)
        self._to_settle.append(message)

    def _forget(self, message: ReceivedMessage) -> None:
        self._origins.pop(id(message), None)

    def _receive_failed(self, error: BaseException, label: str) -> None:
        self.counters.receive_failures += 1
        self.last_error = f"{label}: {describe(error)}"
        if self._failing_since is None:
            self._failing_since = time.monotonic()
            logger.warning("receiving from %s failed, retrying: %s", label, describe(error))

    def _receive_worked(self, label: str) -> None:
        if self._failing_since is not None:
            logger.info(
                "receiving from %s again after %.1f s",
                label,
                time.monotonic() - self._failing_since,
            )
            self._failing_since = None
            self.last_error = None


class FailoverConsumer(_ConsumerBase):
    """A Service Bus receive loop that follows the binding store (see the module docstring)."""

    CHANNEL = ServiceBusConsumeChannel

    def __init__(
        self,
        follower: BindingFollower,
        state: ConsumerState,
        channel: Callable[[str], _SyncChannel],
        *,
        on_skip: Callable[[ReceivedMessage], None] | None = None,
    ) -> None:
        super().__init__(follower, state, channel, on_skip=on_skip)
        self._channel: _SyncChannel | None = None
        self.state.load()

    def receive(
        self, max_message_count: int = 100, max_wait_time: float = 1.0
    ) -> list[ReceivedMessage]:
        """The next messages to process (already-processed ones are completed and left out)."""
        self.checkpoint()
        namespace = self.follower.namespace()
        if namespace != self._namespace:
            self._move(namespace)
        channel = self._open()
        try:
            messages = channel.receive(max_message_count, max_wait_time)
        except Exception as error:
            self._receive_failed(error, channel.label)
            self._close_channel()
            time.sleep(max_wait_time)
            return []
        self._receive_worked(channel.label)
        keep, skip = self._screen(namespace, messages)
        for message in skip:
            self._settle(channel.complete, message)
        return keep

    def complete(self, message: ReceivedMessage) -> None:
        """``message`` was processed: record it; it is completed at the next checkpoint."""
        self._record(message)

    def abandon(self, message: ReceivedMessage) -> None:
        """Give ``message`` back unprocessed (it is delivered again)."""
        self._forget(message)
        if self._channel is not None:
            self._settle(self._channel.abandon, message)

    def checkpoint(self) -> None:
        """Persist the log, then complete the messages processed since the last checkpoint."""
        if not self._to_settle:
            self.state.checkpoint()
            return
        self.state.checkpoint()
        settle, self._to_settle = self._to_settle, []
        if self._channel is not None:
            for message in settle:
                self._settle(self._channel.complete, message)

    def _settle(
        self,
        action: Callable[[ReceivedMessage], None],
        message: ReceivedMessage,
    ) -> None:
        try:
            action(message)
        except Exception as error:  # the lock expires and the log skips the redelivery
            logger.debug("settling %s failed: %s", message.message_id, describe(error))

    def _move(self, namespace: str) -> None:
        if self._namespace is not None:
            self.checkpoint()
            logger.info("consumer moves from %s to %s", self._namespace, namespace)
            self.counters.switches += 1
        self._close_channel()
        self._namespace = namespace

    def _open(self) -> _SyncChannel:
        if self._channel is None:
            self._channel = self._make_channel(self.namespace)
        return self._channel

    def _close_channel(self) -> None:
        channel, self._channel = self._channel, None
        if channel is not None:
            try:
                channel.close()
            except Exception as error:
                logger.debug("closing %s: %s", channel.label, describe(error))

    def close(self) -> None:
        """Checkpoint and close the receiver."""
        try:
            self.checkpoint()
        finally:
            self._close_channel()

    def __enter__(self) -> FailoverConsumer:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class AsyncFailoverConsumer(_ConsumerBase):
    """:class:`FailoverConsumer` for asyncio (the blob store is used from a worker thread).
    Create it with :meth:`service_bus` and ``await consumer.open()`` (``async with`` does)."""

    CHANNEL = AsyncServiceBusConsumeChannel

    def __init__(
        self,
        follower: BindingFollower,
        state: ConsumerState,
        channel: Callable[[str], _AsyncChannel],
        *,
        on_skip: Callable[[ReceivedMessage], None] | None = None,
    ) -> None:
        super().__init__(follower, state, channel, on_skip=on_skip)
        self._channel: _AsyncChannel | None = None

    async def open(self) -> None:
        """Load the persisted log (in a worker thread)."""
        await asyncio.to_thread(self.state.load)

    async def receive(
        self, max_message_count: int = 100, max_wait_time: float = 1.0
    ) -> list[ReceivedMessage]:
        """See :meth:`FailoverConsumer.receive`."""
        await self.checkpoint()
        if self.follower.due():
            await asyncio.to_thread(self.follower.refresh)
        namespace = self.follower.namespace()
        if namespace != self._namespace:
            await self._move(namespace)
        if self._channel is None:
            self._channel = self._make_channel(self.namespace)
        channel = self._channel
        try:
            messages = await channel.receive(max_message_count, max_wait_time)
        except Exception as error:
            self._receive_failed(error, channel.label)
            await self._close_channel()
            await asyncio.sleep(max_wait_time)
            return []
        self._receive_worked(channel.label)
        keep, skip = self._screen(namespace, messages)
        for message in skip:
            await self._settle(channel.complete, message)
        return keep

    async def complete(self, message: ReceivedMessage) -> None:
        """See :meth:`FailoverConsumer.complete`."""
        self._record(message)

    async def abandon(self, message: ReceivedMessage) -> None:
        """See :meth:`FailoverConsumer.abandon`."""
        self._forget(message)
        if self._channel is not None:
            await self._settle(self._channel.abandon, message)

    async def checkpoint(self) -> None:
        """See :meth:`FailoverConsumer.checkpoint`."""
        await asyncio.to_thread(self.state.checkpoint)
        settle, self._to_settle = self._to_settle, []
        if self._channel is not None:
            for message in settle:
                await self._settle(self._channel.complete, message)

    async def _settle(self, action: Callable[[ReceivedMessage], Any], message: Any) -> None:
        try:
            await action(message)
        except Exception as error:
            logger.debug("settling %s failed: %s", message.message_id, describe(error))

    async def _move(self, namespace: str) -> None:
        if self._namespace is not None:
            await self.checkpoint()
            logger.info("consumer moves from %s to %s", self._namespace, namespace)
            self.counters.switches += 1
        await self._close_channel()
        self._namespace = namespace

    async def _close_channel(self) -> None:
        channel, self._channel = self._channel, None
        if channel is not None:
            try:
                await channel.close()
            except Exception as error:
                logger.debug("closing %s: %s", channel.label, describe(error))

    async def close(self) -> None:
        try:
            await self.checkpoint()
        finally:
            await self._close_channel()

    async def __aenter__(self) -> AsyncFailoverConsumer:
        await self.open()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()


__all__ = ["AsyncFailoverConsumer", "ConsumerCounters", "FailoverConsumer", "client_key"]

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
  consumer (:class:`~replication.failover._follower.BindingFollower`, refreshed in the
  background); when that changes it settles what it holds on the old namespace and moves.
  Messages the processed-message log knows (:class:`~replication.failover._processed.ProcessedLog`,
  by MessageId) are completed and not returned, and so are further copies of a message it
  returned and the application has not completed yet (the publisher's two attempts of one
  message, the same batch or the next: each such copy is completed with its original, or
  abandoned with it); :attr:`~FailoverConsumer.counters` counts them (``skipped``), and the
  messages processed although the log could not vouch for them (``unverified``). ``on_skip``,
  when given, is called with each skipped copy before it is completed (an audit of what the
  helper dropped: the showcase counts them as what the subscription held).
- :meth:`~FailoverConsumer.complete` records the message as processed; the settlement itself
  waits until the log entry is durable (:meth:`~FailoverConsumer.checkpoint`, run by the next
  :meth:`receive` and by :meth:`close`), so a completed message is never missing from the
  persisted log. Keep the time between ``receive`` calls well under the entity's lock duration.
- **Back-pressure.** When the log cannot be persisted (the store is unreachable or does not
  answer within its deadline), the consumer settles nothing and receives nothing:
  ``receive`` returns no messages (after ``max_wait_time`` when the store failed at once) and
  tries again on the next call; the messages it holds stay locked, and those whose locks
  expire come back later, to be skipped once their entries are durable. The state logs a
  WARNING when the outage starts (and INFO when it ends); the consumer counts
  ``log_write_failures`` and ``held_receives``.
- **Deadlines.** A namespace that cannot be reached, or does not answer, does not raise out of
  ``receive`` and does not hold it: each call is bounded (a receive by ``max_wait_time`` plus
  ``call_timeout``, a settlement by ``call_timeout``, default 10 s,
  :mod:`replication.transport.deadlines`); a settlement that gets no answer is given up (the
  broker delivers the message again when its lock expires, and the log skips it) and so is the
  connection. ``receive`` then returns no messages, logs a WARNING (once per outage) and tries
  again on the next call, so the loop keeps running until the operator's switch moves it
  (``python -m replication failover``). One ``receive`` call therefore returns within
  ``max_wait_time`` plus ``call_timeout``, or the store's deadline when that is longer (10 s
  by default). :attr:`~FailoverConsumer.last_error` says what went wrong.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import timedelta
from typing import Any, ClassVar, Protocol, Self

from replication.runtime import describe
from replication.transport.connections import NamespaceAccess
from replication.transport.deadlines import DEFAULT_CALL_TIMEOUT, seconds
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
    """Messages returned to the application, skipped as already processed (or as a copy of one
    it holds), processed although unverifiable, namespace switches, failed receives, and the
    back-pressure of a log that could not be persisted: checkpoints that failed, receives that
    returned nothing because of it, and settlements given up (no answer, or an error)."""

    received: int = 0
    skipped: int = 0
    unverified: int = 0
    switches: int = 0
    receive_failures: int = 0
    log_write_failures: int = 0
    held_receives: int = 0
    settle_failures: int = 0


class _SyncChannel(Protocol):
    label: str

    @property
    def broken(self) -> bool: ...

    def receive(self, max_message_count: int, max_wait_time: float) -> list[ReceivedMessage]: ...

    def complete(self, message: ReceivedMessage) -> None: ...

    def abandon(self, message: ReceivedMessage) -> None: ...

    def close(self) -> None: ...


class _AsyncChannel(Protocol):
    label: str

    @property
    def broken(self) -> bool: ...

    async def receive(
        self, max_message_count: int, max_wait_time: float
    ) -> list[ReceivedMessage]: ...

    async def complete(self, message: ReceivedMessage) -> None: ...

    async def abandon(self, message: ReceivedMessage) -> None: ...

    async def close(self) -> None: ...


def client_key(app: str, instance: str | None, entity: str, subscription: str | None) -> str:
    """The name a consumer's state is stored under."""
    return "/".join([app, instance or "_", entity, subscription or "_"])


@dataclasses.dataclass(slots=True)
class _Handed:
    """A message returned to the application and not settled yet: its MessageId and origin,
    and the further copies of it received meanwhile (settled with it)."""

    message_id: str | None
    origin: OriginPosition
    copies: list[ReceivedMessage] = dataclasses.field(default_factory=list)


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
        self._handed: dict[int, _Handed] = {}
        self._by_id: dict[str, _Handed] = {}
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
        call_timeout: timedelta = DEFAULT_CALL_TIMEOUT,
    ) -> Self:
        """A consumer of the queue ``entity`` (or of its ``subscription`` when ``entity`` is a
        topic). Without a ``store`` it stays on the first namespace and keeps its log in memory
        only. ``on_skip`` sees each message the log skips, before it is completed;
        ``call_timeout`` bounds each call to a namespace (see the module docstring). The sync
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
        limit = seconds(call_timeout)
        return cls(
            follower,
            state,
            lambda name: channel_class(
                namespaces[name], entity, subscription, label=f"{name}/{entity}", call_timeout=limit
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

    @property
    def unsettled(self) -> int:
        """Processed messages (and their copies) whose settlement waits for a durable log."""
        return len(self._to_settle)

    def _screen(
        self, namespace: str, messages: list[ReceivedMessage]
    ) -> tuple[list[ReceivedMessage], list[ReceivedMessage]]:
        """(to process, to complete as already processed). A further copy of a message handed
        out and not settled yet is neither: it is settled with that message."""
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
            original = None if facts.message_id is None else self._by_id.get(facts.message_id)
            decision: Decision = self.log.decide(facts.message_id, origin)
            if original is not None or decision.skip:
                self.counters.skipped += 1
                if self._on_skip is not None:
                    self._on_skip(message)
                if original is not None and not decision.skip:
                    original.copies.append(message)  # handled once: with its original
                else:
                    skip.append(message)
                continue
            if decision.unverified:
                self.counters.unverified += 1
            self.counters.received += 1
            handed = _Handed(facts.message_id, origin)
            self._handed[id(message)] = handed
            if facts.message_id is not None:
                self._by_id[facts.message_id] = handed
            keep.append(message)
        return keep, skip

    def _take(self, message: ReceivedMessage) -> _Handed:
        handed = self._handed.pop(id(message), None)
        if handed is None:
            raise ValueError("complete() takes a message this consumer's receive() returned")
        if handed.message_id is not None and self._by_id.get(handed.message_id) is handed:
            del self._by_id[handed.message_id]
        return handed

    def _record(self, message: ReceivedMessage) -> None:
        handed = self._take(message)
        self.log.record(handed.message_id, handed.origin)
        self._to_settle += [message, *handed.copies]

    def _forget(self, message: ReceivedMessage) -> list[ReceivedMessage]:
        """The message and its copies, to abandon."""
        handed = self._handed.get(id(message))
        if handed is None:
            return [message]
        self._take(message)
        return [message, *handed.copies]

    def _skipped_now(self, skip: list[ReceivedMessage]) -> list[ReceivedMessage]:
        """Skipped copies to complete now: all of them while every log entry is durable;
        otherwise they wait with the others for the next durable checkpoint."""
        if not self.state.pending:
            return skip
        self._to_settle += skip
        return []

    def _persisted(self, durable: bool) -> list[ReceivedMessage]:
        """After a checkpoint: the messages to settle now (none unless it was durable; the
        state logs the outage and its end)."""
        if durable:
            settle, self._to_settle = self._to_settle, []
            return settle
        self.counters.log_write_failures += 1
        self.counters.held_receives += 1
        return []

    def _settle_failed(self, message: ReceivedMessage, error: BaseException) -> None:
        # Its lock expires and the broker delivers it again; the log skips that copy.
        self.counters.settle_failures += 1
        logger.debug("settling %s failed: %s", message.message_id, describe(error))

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


def _rest(started: float, max_wait_time: float) -> float:
    """What is left of ``max_wait_time`` since ``started`` (a failure that came at once still
    waits it out, so a loop around ``receive`` never spins)."""
    return max(0.0, max_wait_time - (time.monotonic() - started))


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
        """The next messages to process (already-processed ones are completed and left out);
        none while the log cannot be persisted or the namespace does not answer."""
        started = time.monotonic()
        if not self._checkpoint():
            time.sleep(_rest(started, max_wait_time))
            return []
        if self._channel is not None and self._channel.broken:
            self._close_channel()  # a settlement got no answer: the namespace is silent
            return []
        namespace = self.follower.namespace()
        if namespace != self._namespace:
            self._move(namespace)
        channel = self._open()
        try:
            messages = channel.receive(max_message_count, max_wait_time)
        except Exception as error:
            self._receive_failed(error, channel.label)
            self._close_channel()
            time.sleep(_rest(started, max_wait_time))
            return []
        self._receive_worked(channel.label)
        keep, skip = self._screen(namespace, messages)
        for message in self._skipped_now(skip):
            self._settle(channel.complete, message)
        return keep

    def complete(self, message: ReceivedMessage) -> None:
        """``message`` was processed: record it; it is completed at the next checkpoint."""
        self._record(message)

    def abandon(self, message: ReceivedMessage) -> None:
        """Give ``message`` back unprocessed (it is delivered again), with its copies."""
        for each in self._forget(message):
            if self._channel is not None:
                self._settle(self._channel.abandon, each)

    def checkpoint(self) -> None:
        """Persist the log, then complete the messages processed since the last checkpoint
        (nothing is completed while the log cannot be persisted)."""
        self._checkpoint()

    def _checkpoint(self) -> bool:
        settle = self._persisted(self.state.checkpoint())
        if self._channel is not None:
            for message in settle:
                self._settle(self._channel.complete, message)
        return not self.state.pending

    def _settle(
        self,
        action: Callable[[ReceivedMessage], None],
        message: ReceivedMessage,
    ) -> None:
        try:
            action(message)
        except Exception as error:
            self._settle_failed(message, error)

    def _move(self, namespace: str) -> None:
        if self._namespace is not None:
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
            self.follower.close()
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
        started = time.monotonic()
        if not await self._checkpoint():
            await asyncio.sleep(_rest(started, max_wait_time))
            return []
        if self._channel is not None and self._channel.broken:
            await self._close_channel()
            return []
        if self.follower.due():  # the first read of the store, off the event loop
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
            await asyncio.sleep(_rest(started, max_wait_time))
            return []
        self._receive_worked(channel.label)
        keep, skip = self._screen(namespace, messages)
        for message in self._skipped_now(skip):
            await self._settle(channel.complete, message)
        return keep

    async def complete(self, message: ReceivedMessage) -> None:
        """See :meth:`FailoverConsumer.complete`."""
        self._record(message)

    async def abandon(self, message: ReceivedMessage) -> None:
        """See :meth:`FailoverConsumer.abandon`."""
        for each in self._forget(message):
            if self._channel is not None:
                await self._settle(self._channel.abandon, each)

    async def checkpoint(self) -> None:
        """See :meth:`FailoverConsumer.checkpoint`."""
        await self._checkpoint()

    async def _checkpoint(self) -> bool:
        settle = self._persisted(await asyncio.to_thread(self.state.checkpoint))
        if self._channel is not None:
            for message in settle:
                await self._settle(self._channel.complete, message)
        return not self.state.pending

    async def _settle(
        self, action: Callable[[ReceivedMessage], Awaitable[None]], message: ReceivedMessage
    ) -> None:
        try:
            await action(message)
        except Exception as error:
            self._settle_failed(message, error)

    async def _move(self, namespace: str) -> None:
        if self._namespace is not None:
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
            self.follower.close()
            await self._close_channel()

    async def __aenter__(self) -> AsyncFailoverConsumer:
        await self.open()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()


__all__ = ["AsyncFailoverConsumer", "ConsumerCounters", "FailoverConsumer", "client_key"]

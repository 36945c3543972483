"""The local host's Service Bus receive loops (``python -m replication run``).

In Azure the Functions host reads the source entities and calls the task's function with a
batch. Locally, where the Functions Core Tools may not be available, these loops do the same
with the SDK, with the host's semantics, and never give up (each runs under
:func:`~replication.runtime.supervise`, which reconnects with backoff and reports the failure
in the task's :class:`~replication.runtime.TaskStatus`):

- PEEK_LOCK, one thread per connection (:func:`loop_receiver`): a batch is completed when the
  runner returns; when it raises, every message of the batch is abandoned, so the broker
  redelivers it in order. Locks are renewed
  while the batch is in flight (:class:`LockKeeper`), as the Functions host does for single
  messages, so a slow send does not lose them. A message whose body or properties cannot be
  read is dead-lettered in the source at once with the converter's reason. A settlement that
  fails (a lock lost anyway) is logged: the broker redelivers that message and the runner's
  ledger or the target's duplicate detection drops the copy. This settle step
  (:func:`_settle_batch`) is the one for both loops below.
- A session-enabled source is read one session at a time per loop
  (:func:`run_servicebus_session_source`; the host runs :data:`CONCURRENT_SESSIONS`). Its
  messages are forwarded only in their order: a batch whose sequence numbers go back (below
  one of its own or below what the loop already settled of the session) stops that session
  (:class:`SessionOrder`): nothing more of it is forwarded while this process runs, and an
  ERROR says which messages came in which order.

**One thread reads each receiver's connection.** azure-servicebus 7.15.0's sync receiver
without prefetch forces a keep-alive thread that reads the connection every 5 s beside the
receiving thread (``keep_alive_interval=... if self._prefetch_count != 0 else 5`` in
``_servicebus_receiver.py``), and the two handle the frames they read outside the transport's
lock (``_pyamqp/_connection.py`` ``_read_frame``; ``ReceiverLink._incoming_transfer``). A
transfer the keep-alive thread reads is then handed over after transfers the receiving thread
read later, or released after the receive returned and delivered again after them: a session's
messages out of order (reproduced by ``tests/faults/test_session_order_race.py``), and, when
both threads settle one delivery, a message that stays locked until its lock expires (late by a
lock duration). A receiver with a prefetch and ``keep_alive=0`` (the receiver's own option:
the client does not pass its ``keep_alive`` on, and the default starts a thread every 30 s) has
no such thread, so the loops receive with a prefetch of one batch (:func:`loop_receiver`):
while a batch is in flight the next one may already be locked in the SDK's buffer, and its
locks are not renewed. A message whose lock expired there is still replicated when its turn
comes, in its order (its completion then fails and the broker's redelivery is dropped by the
runner's ledger). A batch that failed is abandoned and the receiver closed at once, which
releases what it had prefetched (a session receiver's close releases its session with its
unsettled messages): the abandoned messages come back first, the prefetched ones behind them,
as without prefetch. Only a loop isolating a
message the SDK cannot decode (:class:`Isolation`) receives without prefetch, one message per
call, where only one transfer is ever in flight and the keep-alive thread has nothing to
reorder.

Messages the SDK cannot decode (azure-servicebus 7.15.0, measured against the emulator in
``tests/e2e/test_poison_messages.py``) never reach the converters, because the SDK decodes
every transfer inside ``receive_messages``, before any per-message handling:

- an application property (or any other section value) of type **char, decimal32 or
  decimal64**: the SDK's decoder has no entry for these constructors (0x73, 0x74, 0x84), the
  ``TypeError`` shuts the handler down and ``receive_messages`` raises ``ServiceBusError``
  ("Handler failed: 'NoneType' object is not callable."); ``peek_messages`` raises the same.
- **decimal128** (0x94), even one the SDK encoded itself: its decoder reads the exponent wrongly
  and raises ``ValueError`` ("Invalid AMQP decimal128 encoding"), which the receive client takes
  for its own timeout signal: the handler shuts down *without an error* and every later
  ``receive_messages`` on that receiver returns ``[]`` at once, forever. ``peek_messages``
  raises ``ServiceBusError`` ("Handler failed: Invalid AMQP decimal128 encoding ...").

Either way the message stays locked, is redelivered when its lock expires, fails the same way,
and reaches the dead-letter queue through ``MaxDeliveryCount`` (where reading it fails again).
The loop survives both: its supervisor reconnects after the error, and a receiver that
returns empty at once several times in a row is treated as dead and replaced. Between two
expiries of the poison message's lock, the other messages flow.
Messages received together with it on the same link share its fate. Everything else the SDK
decodes: maps and lists as application properties, non-UTF-8 binary in MessageId or in a
property become :class:`~replication.exceptions.MessageRejectedError` in the converters and are
dead-lettered with its reason.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Protocol

from azure.servicebus import (
    NEXT_AVAILABLE_SESSION,
    ServiceBusClient,
    ServiceBusReceivedMessage,
    ServiceBusReceiver,
    ServiceBusSession,
    ServiceBusSessionFilter,
)
from azure.servicebus.exceptions import (
    OperationTimeoutError,
    ServiceBusConnectionError,
    ServiceBusError,
    SessionLockLostError,
)

from replication.envelope import Envelope
from replication.exceptions import (
    MessageRejectedError,
    ReplicationError,
    SessionOrderError,
    UnreadableTransferError,
)
from replication.runtime import (
    BatchOutcome,
    BatchRunner,
    RetryPolicy,
    TaskStatus,
    describe,
    failure_level,
)
from replication.settings import Settings
from replication.topology import EntityRef, NamespaceSpec
from replication.transport.connections import servicebus_client

from ._conversion import envelope_from_received
from ._receivers import source_receiver

logger = logging.getLogger(__name__)

RECEIVE_WAIT_SECONDS = 1.0
DEAD_RECEIVER_EMPTIES = 5
"""Empty receives in a row, each back in under a tenth of the wait, that mark a dead receiver."""
MIN_OVERDUE_SECONDS = 60.0
"""A batch in flight longer than twice its task's attempt budget, and at least this long, is
logged as overdue (:func:`overdue_after`)."""


def run_servicebus_source(
    namespace: NamespaceSpec,
    source: EntityRef,
    runner: BatchRunner,
    stop: threading.Event,
    status: TaskStatus,
    *,
    settings: Settings,
    max_batch_size: int = 100,
    lock_renewal_seconds: float = 600.0,
    isolation: Isolation | None = None,
) -> None:
    """Receive batches from a queue, subscription or their DLQ until ``stop`` is set (raises
    when the connection fails; :func:`~replication.runtime.supervise` restarts it).
    ``isolation``, kept across restarts, makes the loop receive one message at a time after a
    receive failed."""
    isolation = isolation or Isolation()
    with servicebus_client(namespace, settings) as client, LockRenewer() as renewer:
        alone = isolation.active()
        receiver = loop_receiver(client, source, isolation, max_batch_size, wait=1)
        with receiver:
            instant_empties = 0
            while not stop.is_set():
                if alone and not isolation.active():
                    return  # the isolation is over: reconnect with a prefetch again
                asked = time.monotonic()
                messages = _receive(receiver, isolation, max_batch_size)
                if not messages:
                    try:
                        instant_empties = _check_alive(asked, instant_empties)
                    except ConnectionError:
                        isolation.begin()
                        raise
                    status.touch()  # connected, and nothing is failing over and over
                    continue
                instant_empties = 0
                with LockKeeper.for_messages(
                    receiver,
                    messages,
                    limit=lock_renewal_seconds,
                    renewer=renewer,
                    overdue=overdue_after(runner.retry),
                    what=f"{source.describe()}: a batch of {len(messages)} message(s)",
                ):
                    outcome = _run_servicebus_batch(
                        receiver, messages, runner, source=source.entity_path
                    )
                if not _settle_batch(receiver, outcome, runner, status):
                    return  # reconnect: the prefetched messages go back behind the batch


CONCURRENT_SESSIONS = 8
"""Session loops per session-enabled task in the local host. The Functions host runs one session
at a time per instance (its batch loop, ``ServiceBusListener.RunBatchReceiveLoopAsync``, accepts
the next session, drains it and releases it) and scales out over instances; the local host is
one process standing in for several instances, so it holds this many sessions side by side."""

SESSION_IDLE_SECONDS = 1.0
"""A held session is released after a receive that waited this long for nothing: host.json's
``sessionIdleTimeout`` (infra/README.md), which the Functions batch loop uses the same way."""


def run_servicebus_session_source(
    namespace: NamespaceSpec,
    source: EntityRef,
    runner: BatchRunner,
    stop: threading.Event,
    status: TaskStatus,
    *,
    settings: Settings,
    max_batch_size: int = 100,
    lock_renewal_seconds: float = 600.0,
    isolation: Isolation | None = None,
) -> None:
    """Receive from a session-enabled queue or subscription, one session at a time, until
    ``stop`` is set (raises when the connection fails; :func:`~replication.runtime.supervise`
    restarts it).

    Each turn accepts the next session nobody holds, receives its batches in order until a
    receive waits :data:`SESSION_IDLE_SECONDS` for nothing, and releases it, as the Functions
    host's batch loop does. The session's lock, which also locks its messages, is renewed for as
    long as it is held (from this thread between batches, by a :class:`LockKeeper` while a batch
    is in flight), so a session drained over many lock durations is not lost half-way. A failed
    batch is abandoned: its messages go back to the head of their session and come next, so the
    order within a session holds across failures, restarts of this loop and of the whole
    process (a lock held by a killed process expires after the entity's lock duration). The host
    runs :data:`CONCURRENT_SESSIONS` of these loops per task.
    """
    isolation = isolation or Isolation()
    # "No session is free" is Service Bus's answer to the attach itself (the detach carries
    # com.microsoft:timeout after the receiver's max_wait_time), and the SDK retries a timed-out
    # open like a failure: three more attempts with back-off, about 19 s in which this loop
    # takes no new session. The receiver's retries cannot be set apart from its client's
    # (get_queue_receiver passes the client's retry_total itself), so this loop's client
    # retries nothing: "no session" comes back after one wait, and any other failure (a
    # settlement, a renewal) ends the turn, which the supervisor restarts; the batch comes back
    # with the session and the runner's ledger keeps it from being sent twice.
    with (
        servicebus_client(namespace, settings, retry_total=0) as client,
        LockRenewer() as renewer,
    ):
        while not stop.is_set():
            receiver = loop_receiver(
                client,
                source,
                isolation,
                max_batch_size,
                wait=SESSION_IDLE_SECONDS,
                session_id=NEXT_AVAILABLE_SESSION,
            )
            try:
                receiver.__enter__()
            except OperationTimeoutError:
                _no_session(receiver, status)
                continue
            with receiver:
                _drain_session(
                    receiver, runner, stop, status, source, isolation,
                    max_batch_size=max_batch_size, limit=lock_renewal_seconds, renewer=renewer,
                )  # fmt: skip


def loop_receiver(
    client: ServiceBusClient,
    source: EntityRef,
    isolation: Isolation,
    max_batch_size: int,
    *,
    wait: float,
    session_id: str | ServiceBusSessionFilter | None = None,
) -> ServiceBusReceiver:
    """The receiver of a loop's turn, read by one thread only: a prefetch of one batch (without a
    keep-alive thread, see :func:`source_receiver`), or none while ``isolation`` receives one
    message per call (then the SDK's keep-alive thread runs,
    but with one transfer in flight at a time it cannot hand two over out of order)."""
    prefetch = 0 if isolation.active() else max_batch_size
    return source_receiver(client, source, wait=wait, session_id=session_id, prefetch=prefetch)


def _no_session(receiver: ServiceBusReceiver, status: TaskStatus) -> None:
    """No session has messages that nobody holds: the service's answer after the wait."""
    receiver.close()
    status.touch()


def _drain_session(
    receiver: ServiceBusReceiver,
    runner: BatchRunner,
    stop: threading.Event,
    status: TaskStatus,
    source: EntityRef,
    isolation: Isolation,
    *,
    max_batch_size: int,
    limit: float,
    renewer: LockRenewer,
) -> None:
    """Replicate the held session's messages batch by batch until it has none for one wait."""
    session = receiver.session
    lock_duration = max(
        1.0, remaining_lock([session.locked_until_utc] if session.locked_until_utc else [])
    )
    order = SessionOrder(source.describe(), session.session_id)
    while not stop.is_set():
        if (
            session.locked_until_utc
            and remaining_lock([session.locked_until_utc]) < lock_duration / 2
        ):
            session.renew_lock()
        try:
            messages = _receive(receiver, isolation, max_batch_size, SESSION_IDLE_SECONDS)
        except OperationTimeoutError:
            # Service Bus answers "no session" at the attach (handled when the receiver is
            # opened); a receive that times out after the session was accepted ends the turn
            # the same way.
            _no_session(receiver, status)
            return
        if not messages:
            status.touch()
            return  # idle: release the session, take the next one
        try:
            order.check(messages)
        except SessionOrderError as error:
            for message in messages:
                _settle(receiver.abandon_message, message)
            hold_stopped_session(
                session.renew_lock, stop, status, error, renew_every=max(1.0, lock_duration / 2)
            )
            return
        with LockKeeper.for_session(
            session,
            limit=limit,
            renewer=renewer,
            overdue=overdue_after(runner.retry),
            what=f"{source.describe()}: a batch of {len(messages)} "
            f"message(s) of session {session.session_id}",
        ):
            outcome = _run_servicebus_batch(receiver, messages, runner, source=source.entity_path)
        if not _settle_batch(receiver, outcome, runner, status):
            return  # release the session: the prefetched messages go back behind the batch
        order.settled(messages)


class Sequenced(Protocol):
    """What :class:`SessionOrder` reads of a received message."""

    @property
    def sequence_number(self) -> int | None: ...

    @property
    def scheduled_enqueue_time_utc(self) -> datetime | None: ...


class SessionOrder:
    """The order of one held session's messages, as the loop forwards them.

    Service Bus delivers a session's messages in the order of their sequence numbers, which
    the broker assigns as it stores them. A batch is checked before anything of it is sent:
    its sequence numbers must increase, and start above the highest one this turn has already
    settled (a failed batch is abandoned and comes back from its first message, so it is not
    counted as settled). A scheduled message is left out of the check: it has the sequence
    number it got when it was scheduled and is delivered when its time comes, after messages
    stored later. Anything else going back means a message reached the loop after one that
    followed it (:class:`~replication.exceptions.SessionOrderError`): the SDK or the broker
    broke the order, and forwarding it would break it at the target too.
    """

    def __init__(self, entity: str, session_id: str) -> None:
        self.entity = entity
        self.session_id = session_id
        self.settled_up_to = -1
        """The highest sequence number this turn settled (-1: none yet)."""

    def check(self, messages: Sequence[Sequenced]) -> None:
        """Raise :class:`SessionOrderError` when ``messages`` are not in their session's order
        after what was settled."""
        last = self.settled_up_to
        for message in messages:
            number = message.sequence_number
            if number is None or message.scheduled_enqueue_time_utc is not None:
                continue
            if number <= last:
                numbers = [m.sequence_number for m in messages]
                raise SessionOrderError(
                    f"{self.entity}: session {self.session_id}: message {number} arrived after "
                    f"message {last} (this turn settled up to {self.settled_up_to}; the batch: "
                    f"{_ranges(numbers)})"
                )
            last = number

    def settled(self, messages: Sequence[Sequenced]) -> None:
        """``messages`` (a checked batch) were settled."""
        numbers = [m.sequence_number for m in messages if m.sequence_number is not None]
        self.settled_up_to = max([self.settled_up_to, *numbers])


STOPPED_SESSION_REMINDER_SECONDS = 600.0
"""How often a stopped session is reported again while this process holds it."""


def hold_stopped_session(
    renew: Callable[[], object],
    stop: threading.Event,
    status: TaskStatus,
    error: SessionOrderError,
    renew_every: float,
) -> None:
    """Stop forwarding a session whose order broke: its batch was given back, and the session
    is held (its lock renewed with ``renew`` every ``renew_every`` seconds, nothing received)
    until this process stops, so that no loop forwards the late message after the ones that
    overtook it. Reported at ERROR now and every :data:`STOPPED_SESSION_REMINDER_SECONDS`, each
    time as a failure of the task."""
    reported = -STOPPED_SESSION_REMINDER_SECONDS
    while not stop.is_set():
        now = time.monotonic()
        if now - reported >= STOPPED_SESSION_REMINDER_SECONDS:
            reported = now
            status.record_failure(error)
            logger.error(
                "%s; the session is stopped: none of its messages is forwarded while this "
                "process runs (the late message stays in the source; check the target's order "
                "for this session before restarting)",
                error,
            )
        stop.wait(min(STOPPED_SESSION_REMINDER_SECONDS, renew_every))
        if stop.is_set():
            return
        try:
            renew()
        except (ServiceBusError, ValueError) as renewal:
            logger.error(
                "%s: cannot keep the session stopped (%s): another loop may forward it",
                error,
                describe(renewal),
            )
            return


def _ranges(numbers: Sequence[int | None]) -> str:
    """Sequence numbers as runs, for a log line: ``5-9, 3, 10-12``."""
    runs: list[list[int]] = []
    for number in numbers:
        if number is None:
            continue
        if runs and number == runs[-1][-1] + 1:
            runs[-1].append(number)
        else:
            runs.append([number])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)


def _receive(
    receiver: ServiceBusReceiver,
    isolation: Isolation,
    max_batch_size: int,
    wait: float = RECEIVE_WAIT_SECONDS,
) -> list[ServiceBusReceivedMessage]:
    """One receive call; a failure on a working connection is a message the SDK cannot decode:
    :class:`UnreadableTransferError`, after which the loop reconnects at once and takes messages
    one at a time for a while (:class:`Isolation`)."""
    try:
        return receiver.receive_messages(
            max_message_count=isolation.batch_size(max_batch_size),
            max_wait_time=wait,
        )
    except (ServiceBusConnectionError, SessionLockLostError, OperationTimeoutError):
        raise
    except Exception as error:
        isolation.begin()
        raise UnreadableTransferError(describe(error)) from error


class Isolation:
    """After a receive that failed (the SDK could not decode a message of it), receive one
    message at a time for a while.

    A message the SDK cannot decode fails the whole receive call, and every message received
    with it stays locked by the dead link and counts one more delivery; receiving it alone
    keeps its batch-mates out of its fate, so only it reaches the dead-letter queue. The window
    outlasts a lock duration (at most 5 minutes), so the poison message, when its lock expires
    and it comes back, is received alone again.
    """

    WINDOW_SECONDS = 360.0

    def __init__(self) -> None:
        self._until = 0.0

    def begin(self) -> None:
        self._until = time.monotonic() + self.WINDOW_SECONDS

    def active(self) -> bool:
        """Whether messages are received one at a time now."""
        return time.monotonic() < self._until

    def batch_size(self, normal: int) -> int:
        return 1 if self.active() else normal


class LockRenewer:
    """The thread that renews the locks of one receive loop's batch in flight (a
    :class:`LockKeeper`), started on the first batch and kept for the loop's lifetime: a
    thread started and joined per batch cost the local host about 3 % of its CPU.

    A renewal runs while this holds its lock, and :meth:`withdraw` takes that lock, so once a
    batch's keeper is withdrawn nothing renews through its receiver any more. The thread lets go
    of a keeper it finds withdrawn (its ``done`` set) before anything else, and waits only
    through the condition, which releases the lock: :meth:`withdraw` always gets it.
    """

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._keeper: LockKeeper | None = None
        self._closed = False
        self._thread: threading.Thread | None = None

    def __enter__(self) -> LockRenewer:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def keep(self, keeper: LockKeeper) -> None:
        """Renew ``keeper``'s locks from now on (one keeper at a time)."""
        with self._lock:
            self._keeper = keeper
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="lock-keeper", daemon=True)
                self._thread.start()
            self._lock.notify()

    def withdraw(self, keeper: LockKeeper) -> None:
        """Stop renewing ``keeper``'s locks; returns once no renewal of them is running."""
        keeper.done.set()  # a renewal in progress stops at its next message
        with self._lock:
            if self._keeper is keeper:
                self._keeper = None
            self._lock.notify()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._lock.notify()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        with self._lock:
            while not self._closed:
                keeper = self._keeper
                if keeper is not None and keeper.done.is_set():
                    # Withdrawn while this thread held the lock (inside a renewal): let it go
                    # here, or this loop would never wait, and withdraw() never get the lock.
                    self._keeper = keeper = None
                if keeper is None:
                    self._lock.wait()
                    continue
                due = time.monotonic() + keeper.next_renewal()
                while self._current(keeper) and (wait := due - time.monotonic()) > 0:
                    self._lock.wait(wait)
                if not self._current(keeper):
                    continue
                elapsed = time.monotonic() - keeper.started
                if elapsed > keeper.limit:
                    logger.warning(
                        "%s has been in flight for %.0f s, the lock renewal limit: its locks are "
                        "no longer renewed, and its messages are redelivered when they expire",
                        keeper.what,
                        elapsed,
                    )
                    self._keeper = None  # as long as a batch may hold its locks
                    continue
                if keeper.overdue is not None and not keeper.warned and elapsed > keeper.overdue:
                    keeper.warned = True
                    logger.warning(
                        "%s has been in flight for %.0f s, longer than its retries may take: "
                        "a send or a transform has not returned; its locks are renewed for up "
                        "to %.0f s",
                        keeper.what,
                        elapsed,
                        keeper.limit,
                    )
                try:
                    keeper.renew_all()
                except Exception as error:  # the thread serves the loop's later batches too
                    logger.warning(
                        "renewing locks failed; not renewing them again: %s", describe(error)
                    )
                    self._keeper = None

    def _current(self, keeper: LockKeeper) -> bool:
        """Whether ``keeper`` is still the one to renew (not withdrawn, nothing closed)."""
        return self._keeper is keeper and not self._closed and not keeper.done.is_set()


class LockKeeper:
    """Renews locks while a batch is in flight: its messages' locks, or its session's lock.

    The SDK's ``AutoLockRenewer`` renews every message from its own pool of threads at once;
    this renews them one after the other from one thread (the loop's :class:`LockRenewer`, or
    one of its own when none is given), before half of the shortest remaining lock has passed,
    and stops before the batch is settled, so the receiver is never used by two threads at a
    time (the runner does not touch it while it sends). A renewal that fails is logged; the
    message is then redelivered after its lock expires and the copy is dropped by the runner's
    ledger or the target's duplicate detection. Build it with :meth:`for_messages` or
    :meth:`for_session`.

    A batch that stays in flight past ``overdue`` is logged once (WARNING): the local host does
    not bound its sends, so a send that never returns would otherwise hold the loop silently
    while its locks are renewed. Reaching ``limit`` is logged too: renewal stops, and the
    messages are redelivered once their locks expire.
    """

    def __init__(
        self,
        renew: Callable[[], None],
        locked_until: Callable[[], list[datetime]],
        *,
        limit: float,
        renewer: LockRenewer | None = None,
        overdue: float | None = None,
        what: str = "a batch",
    ) -> None:
        self.renew_all = renew
        self._locked_until = locked_until
        self.limit = limit
        self.overdue = overdue
        """Seconds in flight after which the batch is logged as overdue, once (None: never)."""
        self.what = what
        """The batch, as the warnings name it (its source and size)."""
        self.warned = False
        self.done = threading.Event()
        self.started = 0.0
        self._renewer = renewer
        self._own: LockRenewer | None = None

    @classmethod
    def for_messages(
        cls,
        receiver: ServiceBusReceiver,
        messages: Sequence[ServiceBusReceivedMessage],
        *,
        limit: float,
        renewer: LockRenewer | None = None,
        overdue: float | None = None,
        what: str = "a batch",
    ) -> LockKeeper:
        """Keeps the locks of ``messages`` (a receiver without sessions)."""
        batch = list(messages)
        keeper: LockKeeper

        def renew() -> None:
            for message in batch:
                if keeper.done.is_set():
                    return
                try:
                    receiver.renew_message_lock(message)
                except (ServiceBusError, ValueError) as error:
                    logger.warning(
                        "cannot renew the lock of message %s: %s",
                        message.sequence_number,
                        describe(error),
                    )

        keeper = cls(
            renew,
            lambda: [m.locked_until_utc for m in batch if m.locked_until_utc],
            limit=limit,
            renewer=renewer,
            overdue=overdue,
            what=what,
        )
        return keeper

    @classmethod
    def for_session(
        cls,
        session: ServiceBusSession,
        *,
        limit: float,
        renewer: LockRenewer | None = None,
        overdue: float | None = None,
        what: str = "a batch",
    ) -> LockKeeper:
        """Keeps the lock of ``session``: a session's messages are locked by it, not each on
        its own (the SDK's ``renew_message_lock`` raises ``TypeError`` on a session receiver:
        "an invalid operation when working with sessions")."""

        def renew() -> None:
            try:
                session.renew_lock()
            except (ServiceBusError, ValueError) as error:
                logger.warning("cannot renew the lock of session %s: %s", session.session_id,
                               describe(error))  # fmt: skip

        return cls(renew, lambda: [session.locked_until_utc] if session.locked_until_utc else [],
                   limit=limit, renewer=renewer, overdue=overdue, what=what)  # fmt: skip

    def __enter__(self) -> LockKeeper:
        self.started = time.monotonic()
        if self._renewer is None:
            self._own = self._renewer = LockRenewer()
        self._renewer.keep(self)
        return self

    def __exit__(self, *_: object) -> None:
        assert self._renewer is not None
        self._renewer.withdraw(self)
        if self._own is not None:
            self._own.close()

    def next_renewal(self) -> float:
        """Seconds until the next renewal: half of the shortest remaining lock."""
        return max(0.2, remaining_lock(self._locked_until()) / 2)


def overdue_after(retry: RetryPolicy) -> float:
    """Seconds after which a batch of a task with this ``retry`` policy is overdue: twice its
    attempt budget (its retries, then one more send), at least :data:`MIN_OVERDUE_SECONDS`."""
    return max(2 * retry.budget, MIN_OVERDUE_SECONDS)


def remaining_lock(locked_until: Sequence[datetime], default: float = 60.0) -> float:
    """Seconds until the first of these locks expires (``default`` when there is none)."""
    now = datetime.now(UTC)
    return min(((moment - now).total_seconds() for moment in locked_until), default=default)


def _check_alive(asked: float, instant_empties: int) -> int:
    """Count receives that came back empty at once; a receiver whose link the SDK shut down
    without an error (a decimal128 property does that) does only that, forever."""
    if time.monotonic() - asked >= RECEIVE_WAIT_SECONDS / 10:
        return 0
    if instant_empties + 1 >= DEAD_RECEIVER_EMPTIES:
        raise ConnectionError(
            "the receiver returns nothing at once: the SDK shut its link down "
            "(a message it cannot decode?); reconnecting"
        )
    return instant_empties + 1


@dataclasses.dataclass
class _ServiceBusBatch:
    """A received batch after the runner: what to complete, abandon or dead-letter."""

    accepted: list[ServiceBusReceivedMessage]
    unreadable: list[tuple[ServiceBusReceivedMessage, MessageRejectedError]]
    outcome: BatchOutcome | None
    error: ReplicationError | None = None


def _run_servicebus_batch(
    receiver: ServiceBusReceiver,
    messages: list[ServiceBusReceivedMessage],
    runner: BatchRunner,
    *,
    source: str | None = None,
) -> _ServiceBusBatch:
    envelopes: list[Envelope] = []
    batch = _ServiceBusBatch([], [], None)
    for message in messages:
        try:
            envelopes.append(envelope_from_received(message, source=source))
            batch.accepted.append(message)
        except MessageRejectedError as error:
            batch.unreadable.append((message, error))
    try:
        batch.outcome = runner.run(envelopes)
    except ReplicationError as error:
        batch.error = error
    except Exception:
        for message in batch.accepted:
            _settle(receiver.abandon_message, message)
        raise
    return batch


def _settle_batch(
    receiver: ServiceBusReceiver, batch: _ServiceBusBatch, runner: BatchRunner, status: TaskStatus
) -> bool:
    """Settle a batch the runner ran; False when it failed and was abandoned (the caller then
    closes the receiver, see the module docstring)."""
    for message, rejection in batch.unreadable:
        logger.warning("dead-lettering a message that cannot be read: %s", rejection)
        _settle(receiver.dead_letter_message, message, rejection.reason, str(rejection)[:1024])
    if batch.error is not None or batch.outcome is None:
        failures = status.record_failure(batch.error or "no outcome")
        logger.log(
            failure_level(failures),
            "%s: batch of %d failed (%d in a row), abandoning for redelivery: %s",
            runner.task.name,
            len(batch.accepted),
            failures,
            describe(batch.error) if batch.error else "no outcome",
        )
        for message in batch.accepted:
            _settle(receiver.abandon_message, message)
        return False
    # A message whose parked copy could only be a notice (too large for the parking entity)
    # stays whole in the source's dead-letter queue, which the notice points to.
    keep = {d.source.sequence_number: d for d in batch.outcome.dead_letter_in_source}
    for message in batch.accepted:
        kept = keep.get(message.sequence_number)
        if kept is None:
            _settle(receiver.complete_message, message)
        else:
            logger.warning(
                "%s: dead-lettering message %s in the source: its parked copy had to leave the "
                "body out",
                runner.task.name,
                message.message_id,
            )
            _settle(receiver.dead_letter_message, message, kept.reason, kept.description[:1024])
    unreadable = len(batch.unreadable)
    status.record(
        len(batch.accepted) + unreadable, parked=len(batch.outcome.dead_lettered) + unreadable
    )
    _log_outcome(runner, batch.outcome)
    return True


def _settle(action: Callable[..., None], message: ServiceBusReceivedMessage, *args: str) -> None:
    """Complete, abandon or dead-letter; a failure (lock lost, connection dropped) leaves the
    message to the broker, which redelivers it when its lock expires. A lost lock can also
    mean that the settlement went through: the SDK settles again over the management link when
    the receive link does not confirm one in time, and that finds the lock gone."""
    try:
        if args:
            action(message, reason=args[0], error_description=args[1])
        else:
            action(message)
    except (ServiceBusError, ValueError) as error:
        logger.warning(
            "cannot settle message %s (the broker redelivers it, unless an unconfirmed "
            "settlement went through): %s",
            message.sequence_number,
            describe(error),
        )


def _log_outcome(runner: BatchRunner, outcome: BatchOutcome) -> None:
    logger.info("%s: %s", runner.task.name, outcome.summary())


__all__ = [
    "CONCURRENT_SESSIONS",
    "MIN_OVERDUE_SECONDS",
    "SESSION_IDLE_SECONDS",
    "Isolation",
    "LockKeeper",
    "LockRenewer",
    "SessionOrder",
    "hold_stopped_session",
    "loop_receiver",
    "overdue_after",
    "run_servicebus_session_source",
    "run_servicebus_source",
]

"""The library's exception hierarchy.

Callers act on the class, not the message:

- :class:`ConfigurationError`: the topology or settings are wrong; fail at start-up.
- :class:`TransientForwardError`: sending a replica failed in a way that a retry may fix
  (throttling, timeouts, connection loss). ``retryable`` is True.
- :class:`PermanentForwardError`: sending failed and retrying the same message will not help
  (a message too large for the target, one the target refuses); the message is parked with
  the error's ``reason``. A missing or forbidden target is *transient*: see its docstring.
- :class:`SourceUnreadableError`: an entity could not be read without settling (``status``).
- :class:`MessageRejectedError`: a single message cannot be processed (malformed replication
  properties, validation failure); it is dead-lettered with ``reason``, the rest of the batch
  goes on.

SDK exceptions are translated to these in one place (``replication.transport.errors``) and always
chained (``raise ... from error``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Generic, TypeVar

Report = TypeVar("Report")


class ReplicationError(Exception):
    """Root of every error this library raises on purpose."""

    retryable: bool = False


class ConfigurationError(ReplicationError):
    """The topology file, an app setting or another piece of configuration is invalid.

    ``source`` names where the configuration came from (a file path or a setting name) and
    ``location`` the JSON path inside it, when known.
    """

    def __init__(self, message: str, *, source: str | None = None, location: str | None = None):
        self.source = source
        self.location = location
        self.detail = message
        prefix = ": ".join(part for part in (source, location) if part)
        super().__init__(f"{prefix}: {message}" if prefix else message)


class ForwardError(ReplicationError):
    """Sending a replica to a target failed.

    ``acknowledged`` holds the positions (in the sequence passed to the failing ``send``) of the
    envelopes the target had already accepted when the error happened, so that the caller
    retries only the others and never sends an acknowledged replica twice.
    """

    def __init__(
        self,
        message: str,
        *,
        target: str | None = None,
        acknowledged: frozenset[int] = frozenset(),
    ):
        self.target = target
        self.acknowledged = acknowledged
        super().__init__(f"{target}: {message}" if target else message)


class TransientForwardError(ForwardError):
    """A retry may succeed: throttling, timeouts, lost connections, busy servers, and a target
    that is missing, disabled or refuses access (after a deployment, role assignments and new
    entities take minutes to become effective; parking every message meanwhile would be worse
    than retrying until the source's delivery budget runs out)."""

    retryable = True


class PermanentForwardError(ForwardError):
    """Retrying the same message will fail the same way; dead-letter it with ``reason``.

    ``culprit`` is the position of the one envelope the error is about (a message too large
    for the target), when the sender knows it; otherwise the caller narrows the batch down.
    """

    reason = "ForwardFailed"

    def __init__(
        self,
        message: str,
        *,
        target: str | None = None,
        acknowledged: frozenset[int] = frozenset(),
        culprit: int | None = None,
        reason: str | None = None,
    ):
        super().__init__(message, target=target, acknowledged=acknowledged)
        self.culprit = culprit
        if reason is not None:
            self.reason = reason


class MessageRejectedError(ReplicationError):
    """One message cannot be processed and must be dead-lettered with ``reason``.

    A subclass names a kind of rejection with its class attribute ``reason``; ``reason=`` in
    the constructor carries one that is only known at run time (a pattern's, a target's)."""

    reason = "MessageRejected"

    def __init__(self, message: str, *, reason: str | None = None):
        super().__init__(message)
        if reason is not None:
            self.reason = reason


class SourceUnreadableError(ReplicationError):
    """Reading an entity without settling anything (a peek, an event hub's partition
    properties) failed: the namespace is unreachable, refuses us, or the entity is missing.
    The message is the SDK error's class and first line; the SDK error is chained."""

    retryable = True


class MalformedReplicationPropertyError(MessageRejectedError):
    """A replication property on the message has a value this library cannot interpret."""

    reason = "MalformedReplicationProperty"


# -- rejections: one message cannot be replicated; its ``reason`` is its DeadLetterReason -----


class UnsupportedBodyError(MessageRejectedError):
    """The message body is an AMQP value or sequence, which a byte-exact replica cannot carry."""

    reason = "UnsupportedBodyType"


class UndecodableFieldError(MessageRejectedError):
    """A message property that is text by contract (MessageId, CorrelationId, ...) holds binary
    that is not UTF-8: no replica could carry it unchanged."""

    reason = "UndecodableMessageField"


class UnsupportedPropertyError(MessageRejectedError):
    """An application property has a key or value this library cannot replicate faithfully."""

    reason = "UnsupportedApplicationProperty"


class OriginalNotAvailableError(MessageRejectedError):
    """A parked notice whose original cannot be read back (``redrive`` never sends a notice as
    the message: the event is gone from its hub, or it was never kept)."""

    reason = "OriginalNotAvailable"


# -- hosts ------------------------------------------------------------------------------------


class TriggerMetadataError(ReplicationError):
    """The batch's trigger metadata does not have the shape the host's source promises.

    Raised instead of guessing, so that no field is attributed to the wrong message; the
    invocation fails and the host redelivers (Service Bus) or retries (Event Hubs).
    """

    reason = "TriggerMetadataInvalid"


class OriginalMustStayError(ReplicationError):
    """A Service Bus message's parked copy could only be a notice (too large for the parking
    entity), so the original must stay in the source, and a batch function cannot dead-letter
    one message of its batch (the Python worker gets no settlement actions).

    The invocation fails after everything else of the batch was replicated and parked: the
    host abandons the batch, and Service Bus dead-letters the message after
    ``maxDeliveryCount`` deliveries, where the notice points. Its batch-mates come back with
    it; the runner's ledger (and the targets' duplicate detection on another instance) keeps
    them from being sent twice, but those delivered with it every time reach the dead-letter
    queue too, already replicated (``docs/explanation/parking.md``).
    """

    def __init__(self, task: str, message_ids: Sequence[str]) -> None:
        super().__init__(
            f"{task}: {len(message_ids)} message(s) must stay in the source for the broker to "
            f"dead-letter (their parked copy could not hold the body): {', '.join(message_ids)}"
        )


class UnreadableTransferError(ReplicationError):
    """A receive on a working connection failed: the SDK could not decode what it received.
    Not an outage: the local host's supervisor reconnects without growing its backoff."""


class SessionOrderError(ReplicationError):
    """A session's messages reached the local host out of their order (a message after one
    that followed it): the session is stopped rather than forwarded out of order."""


class RedriveStoppedError(ReplicationError, Generic[Report]):
    """A redrive stopped early (transient failure, broker unreachable); nothing was lost.

    ``report`` holds the counts up to the stop (the redrive's report); the messages not
    completed are still where they were. Running the redrive again continues.
    """

    retryable = True

    def __init__(self, message: str, report: Report) -> None:
        super().__init__(message)
        self.report = report


class EmulatorStartError(ReplicationError):
    """The emulator exited or printed no settings in time; the message holds its last output."""


# -- failover, transforms and the drill --------------------------------------------------------


class BindingDocumentError(ConfigurationError):
    """A binding document that cannot be read (not JSON, wrong schema, unknown namespace)."""


class SwitchRefusedError(ConfigurationError):
    """The switch asked for is not possible with this topology and binding."""


class CaptureWriteError(ReplicationError):
    """A Service Bus capture could not write a batch durably: the batch stays unsettled and
    comes back (:mod:`replication.capture`)."""

    retryable = True


class SwitchInProgressError(ReplicationError):
    """Another switch of the same application holds the binding document's lease."""


class FailoverStoreError(ReplicationError):
    """The failover store could not be read or written (network, authorization, service)."""

    retryable = True


class CallTimeoutError(ReplicationError, TimeoutError):
    """A network call got no answer within its deadline: the service counts as unreachable
    (``replication.transport.deadlines``). A ``TimeoutError``, so everything that treats an
    SDK timeout as "unreachable, retry later" treats this one so too."""

    retryable = True


class MemoryStoreUnavailableError(ReplicationError):
    """The in-memory store was told to be unavailable."""

    retryable = True


class PublishTimeoutError(ReplicationError):
    """No namespace accepted the messages within the send timeout."""

    retryable = True


class CodeReferenceError(ReplicationError, ValueError):
    """A ``module:attribute`` reference that cannot be imported (the message says why)."""


class TransformSignatureError(ReplicationError, ValueError):
    """The object named as a transform cannot be called with one message."""


class MissingExtraError(ReplicationError, ImportError):
    """A feature needs an optional part of the distribution that is not installed; the message
    names the extra to install (``replication.extras``). An ImportError too, so code that
    guards an optional import the usual way still catches it."""

    def __init__(self, message: str, *, extra: str):
        super().__init__(message)
        self.extra = extra


class MissingProgramError(ReplicationError):
    """A feature needs a program outside Python (Java for PySpark) that is missing or too old;
    the message says what to install."""


class DrillSetupError(ReplicationError):
    """A process of the drill did not start; the message holds its last output."""


__all__ = [
    "BindingDocumentError",
    "CallTimeoutError",
    "CaptureWriteError",
    "CodeReferenceError",
    "ConfigurationError",
    "DrillSetupError",
    "EmulatorStartError",
    "FailoverStoreError",
    "ForwardError",
    "MalformedReplicationPropertyError",
    "MemoryStoreUnavailableError",
    "MessageRejectedError",
    "MissingExtraError",
    "MissingProgramError",
    "OriginalMustStayError",
    "OriginalNotAvailableError",
    "PermanentForwardError",
    "PublishTimeoutError",
    "RedriveStoppedError",
    "ReplicationError",
    "SessionOrderError",
    "SourceUnreadableError",
    "SwitchInProgressError",
    "SwitchRefusedError",
    "TransformSignatureError",
    "TransientForwardError",
    "TriggerMetadataError",
    "UndecodableFieldError",
    "UnreadableTransferError",
    "UnsupportedBodyError",
    "UnsupportedPropertyError",
]

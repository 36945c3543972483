"""The library's exception hierarchy.

Callers act on the class, not the message:

- :class:`ConfigurationError`: the topology or settings are wrong; fail at start-up.
- :class:`TransientForwardError`: sending a replica failed in a way that a retry may fix
  (throttling, timeouts, connection loss). ``retryable`` is True.
- :class:`PermanentForwardError`: sending failed and retrying the same message will not help
  (message too large, entity not found, unauthorized); the message is dead-lettered with the
  error's ``reason``.
- :class:`MessageRejectedError`: a single message cannot be processed (malformed replication
  properties, validation failure); it is dead-lettered with ``reason``, the rest of the batch
  goes on.

SDK exceptions are translated to these in one place (``replication.transport.errors``) and always
chained (``raise ... from error``).
"""

from __future__ import annotations


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
    """Sending a replica to a target failed."""

    def __init__(self, message: str, *, target: str | None = None):
        self.target = target
        super().__init__(f"{target}: {message}" if target else message)


class TransientForwardError(ForwardError):
    """A retry may succeed: throttling, timeouts, lost connections, busy servers."""

    retryable = True


class PermanentForwardError(ForwardError):
    """Retrying the same message will fail the same way; dead-letter it with ``reason``."""

    reason = "ForwardFailed"


class MessageRejectedError(ReplicationError):
    """One message cannot be processed and must be dead-lettered with ``reason``."""

    reason = "MessageRejected"


class MalformedReplicationPropertyError(MessageRejectedError):
    """A replication property on the message has a value this library cannot interpret."""

    reason = "MalformedReplicationProperty"


__all__ = [
    "ConfigurationError",
    "ForwardError",
    "MalformedReplicationPropertyError",
    "MessageRejectedError",
    "PermanentForwardError",
    "ReplicationError",
    "TransientForwardError",
]

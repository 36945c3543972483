"""The exit codes of every command line of the project, one meaning each.

``python -m replication``, ``python -m emulator`` and ``python -m spark.dedup_audit`` exit with
these, so that scripts and CI can tell "the check found something" from "the input was wrong"
from "something could not be reached" whichever tool they ran.
"""

from __future__ import annotations

import enum

from replication.exceptions import (
    CallTimeoutError,
    FailoverStoreError,
    ReplicationError,
    SourceUnreadableError,
)


class ExitCode(enum.IntEnum):
    """Process exit codes."""

    OK = 0
    """Done, nothing to report. ``status`` exits 0 whatever states it reports (tasks FAILING,
    LAGGING or STALLED, parked counts above the threshold): read its report, or its ``--json``."""
    FINDINGS = 1
    """The command ran and found problems: rejected rules, lost or looping messages."""
    CONFIGURATION = 2
    """Bad arguments, topology, config file or input: nothing was done (argparse uses 2 too)."""
    UNAVAILABLE = 3
    """A service or port could not be reached or bound. ``status`` exits 3 only for that: a
    namespace, the checkpoint store or the failover store it could not read. ``run`` also
    exits 3 when a task is failing as it ends (it could not reach its source or its targets,
    or its last batch failed)."""
    INTERRUPTED = 130
    """Stopped by Ctrl-C before it finished (128 + SIGINT, as shells report it). A command
    that serves until it is stopped (``run`` without ``--until-idle``, ``emulator``) exits 0
    when stopped: stopping is how it finishes. ``run`` exits 3 instead when a task is failing
    at that moment."""


UNREACHABLE: tuple[type[ReplicationError], ...] = (
    FailoverStoreError,
    CallTimeoutError,
    SourceUnreadableError,
)
"""Errors that mean "could not be reached" (3), not "the input was wrong" (2)."""


def exit_code_for(error: ReplicationError) -> ExitCode:
    """The exit code of a command that ended with ``error``: ``UNAVAILABLE`` for a service
    that could not be reached or did not answer (:data:`UNREACHABLE`), else
    ``CONFIGURATION``."""
    return ExitCode.UNAVAILABLE if isinstance(error, UNREACHABLE) else ExitCode.CONFIGURATION


__all__ = ["UNREACHABLE", "ExitCode", "exit_code_for"]

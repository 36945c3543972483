"""The capture's record format and file names (pure: no I/O).

One line per copy, the audit's ``--format json`` record: ``message_id``, ``enqueued_time_utc``
(ISO-8601 with milliseconds, UTC), ``sequence_number`` and ``properties`` (the application
properties as text, the replication properties among them). Bodies are not captured: the audit
does not read them, and a capture of every message's body would be a second copy of the
traffic.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from replication.envelope import Envelope
from replication.properties import format_timestamp

SUFFIX = ".jsonl"


def capture_record(envelope: Envelope) -> dict[str, Any]:
    """One record of the audit's JSON input."""
    enqueued = envelope.enqueued_time_utc
    return {
        "message_id": envelope.message_id,
        "enqueued_time_utc": format_timestamp(enqueued) if enqueued else None,
        "sequence_number": envelope.sequence_number,
        "properties": {k: str(v) for k, v in envelope.application_properties.items()},
    }


def capture_line(envelope: Envelope) -> str:
    """:func:`capture_record` as one line of JSON, newline included."""
    return json.dumps(capture_record(envelope), sort_keys=True) + "\n"


def partition_path(region: str, enqueued: datetime) -> str:
    """``{region}/{yyyy}/{MM}/{dd}/{HH}``: the hour (UTC) a copy was enqueued in."""
    utc = enqueued.replace(tzinfo=UTC) if enqueued.tzinfo is None else enqueued.astimezone(UTC)
    return f"{region}/{utc:%Y/%m/%d/%H}"


def batch_name(copies: Sequence[Envelope]) -> str:
    """The file name of ``copies``: a digest of what identifies each (MessageId, sequence
    number, enqueue time), so that the same copies give the same name, whatever else they hold."""
    digest = hashlib.sha256()
    for copy in copies:
        enqueued = format_timestamp(copy.enqueued_time_utc) if copy.enqueued_time_utc else ""
        digest.update(f"{copy.message_id}\t{copy.sequence_number}\t{enqueued}\n".encode())
    return f"{digest.hexdigest()[:24]}{SUFFIX}"


__all__ = ["SUFFIX", "batch_name", "capture_line", "capture_record", "partition_path"]

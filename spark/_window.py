"""Which capture files an audit reads: every file of the input folders, checked for foreign
files, or with ``--since`` / ``--until`` only the time partitions of that window.

Captures grow by the hour, so a daily audit should read one day, not the whole history. Both
namings of time-partitioned captures are understood, by the path below the region's folder:

- **Event Hubs Capture**, default ``archiveNameFormat``
  ``{Namespace}/{EventHub}/{PartitionId}/{Year}/{Month}/{Day}/{Hour}/{Minute}/{Second}``: a file
  ``.../2024/05/01/12/05/00.avro`` is named after its capture window, which is at most
  :data:`CAPTURE_LONGEST_WINDOW` long (Capture's ``intervalInSeconds`` is 60-900): it may hold
  events enqueued that long either side of its name's time. Capture names may order the tokens
  differently; only the default order is recognised.
- **This library's capture tasks** (``{region}/{yyyy}/{MM}/{dd}/{HH}/...``,
  :mod:`replication.capture`): a file under ``.../2024/05/01/12/`` holds copies enqueued in that
  hour of UTC.

An audit of the window ``[since, until)`` audits the messages whose first copy was enqueued in
it. Their other copies may be enqueued up to the watermark earlier (clock skew) or later, so the
files of ``[since - watermark, until + watermark)`` are read; copies read in the margins serve to
find those messages' copies and are not audited themselves (their messages belong to the windows
before and after). A copy that trails its message's first copy by more than the watermark and
falls after ``until + watermark`` is not read, and its message counts as missing there: give a
longer ``--watermark`` to look further.

How it fails (:class:`SelectionError`, one line, exit code 2): a file whose name does not end as
its format's files do (a foreign file: Spark would read it as records or fail mid-job), a window
over files whose path has no time partition, a window no file of any region falls in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from ._storage import FileEntry

CAPTURE_LONGEST_WINDOW = timedelta(minutes=15)
"""Event Hubs Capture's longest time window (``intervalInSeconds`` at most 900)."""
HOUR = timedelta(hours=1)

SUFFIXES = {
    "json": (".json", ".jsonl", ".ndjson", ".json.gz", ".jsonl.gz"),
    "parquet": (".parquet",),
    "capture": (".avro",),
}
"""The file names each ``--format`` reads; any other file in an input folder is foreign."""
FORMAT_NAMES = {
    "json": "a JSON-lines",
    "parquet": "a Parquet",
    "capture": "an Event Hubs Capture (Avro)",
}

_CAPTURE_NAME = re.compile(r"(?:^|/)(\d{4})/(\d{2})/(\d{2})/(\d{2})/(\d{2})/(\d{2})\.avro$")
_HOURLY = re.compile(r"(?:^|/)(\d{4})/(\d{2})/(\d{2})/(\d{2})/(?:[^/]+/)*[^/]+$")


class SelectionError(ValueError):
    """The input files cannot be selected as asked; one line naming the region and file."""


@dataclass(frozen=True)
class Window:
    """``[since, until)`` in UTC; either end may be open (None)."""

    since: datetime | None
    until: datetime | None

    @property
    def bounded(self) -> bool:
        return self.since is not None or self.until is not None

    def overlaps(self, start: datetime, end: datetime, margin: timedelta) -> bool:
        """Whether ``[start, end)`` meets the window widened by ``margin`` on both sides."""
        if self.since is not None and end <= self.since - margin:
            return False
        return not (self.until is not None and start >= self.until + margin)

    def describe(self) -> dict[str, str | None]:
        return {"since": _iso(self.since), "until": _iso(self.until)}


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat().replace("+00:00", "Z") if moment is not None else None


def parse_time(text: str, option: str) -> datetime:
    """An ISO-8601 time (``2024-05-01``, ``2024-05-01T12:00Z``); without a zone, UTC."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"{option} {text!r}: expected an ISO-8601 time, e.g. 2024-05-01T00:00:00Z"
        ) from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def file_span(relative: str) -> tuple[datetime, datetime] | None:
    """The enqueue times a capture file may hold, from its path (None: no time partition)."""
    capture = _CAPTURE_NAME.search(relative)
    if capture:
        year, month, day, hour, minute, second = (int(part) for part in capture.groups())
        named = datetime(year, month, day, hour, minute, second, tzinfo=UTC)
        return named - CAPTURE_LONGEST_WINDOW, named + CAPTURE_LONGEST_WINDOW
    hourly = _HOURLY.search(relative)
    if hourly:
        year, month, day, hour = (int(part) for part in hourly.groups())
        start = datetime(year, month, day, hour, tzinfo=UTC)
        return start, start + HOUR
    return None


@dataclass(frozen=True)
class Selection:
    """The files of one region that the audit reads, and how many it left out."""

    files: list[str]
    skipped: int


def select_files(
    region: str,
    folder: str,
    entries: list[FileEntry],
    fmt: str,
    window: Window,
    margin: timedelta,
) -> Selection:
    """The files of ``entries`` (a listing of ``folder``) to read for ``window``.

    Raises:
        SelectionError: a foreign file, or a window over a file without a time partition.
    """
    suffixes = SUFFIXES[fmt]
    chosen: list[str] = []
    skipped = 0
    for entry in entries:
        if not entry.relative.lower().endswith(suffixes):
            raise SelectionError(
                f"region {region}: {entry.uri} is not {FORMAT_NAMES[fmt]} file (expected names "
                f"ending in {', '.join(suffixes)}); move it out of {folder}"
            )
        if not window.bounded:
            chosen.append(entry.uri)
            continue
        span = file_span(entry.relative)
        if span is None:
            raise SelectionError(
                f"region {region}: --since/--until need time-partitioned captures, and "
                f"{entry.uri} has no .../yyyy/MM/dd/HH/ (or Capture's .../mm/ss.avro) in its path"
            )
        if window.overlaps(*span, margin):
            chosen.append(entry.uri)
        else:
            skipped += 1
    return Selection(chosen, skipped)


__all__ = [
    "CAPTURE_LONGEST_WINDOW",
    "SUFFIXES",
    "Selection",
    "SelectionError",
    "Window",
    "file_span",
    "parse_time",
    "select_files",
]

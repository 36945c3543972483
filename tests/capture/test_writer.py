"""The capture writer on a folder: the audit's record format, one file per hour and batch, the
same batch written again rewrites the same file. (Killed mid-write and redelivered:
tests/faults/test_capture.py.)"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from replication.capture import CaptureWriter, FolderStore, batch_name, partition_path
from replication.envelope import Envelope
from replication.properties import REPL_ORIGIN

T0 = datetime(2024, 5, 1, 11, 59, 59, 500000, tzinfo=UTC)


def copy(number: int, at: datetime, **properties: str) -> Envelope:
    return Envelope(
        message_id=f"m{number}",
        enqueued_time_utc=at,
        sequence_number=number,
        application_properties=dict(properties),
    )


def files(root: Path) -> dict[str, list[dict[str, object]]]:
    return {
        path.relative_to(root).as_posix(): [
            json.loads(line) for line in path.read_text().splitlines()
        ]
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def test_a_batch_is_written_per_hour_in_the_audits_record_format(tmp_path: Path) -> None:
    batch = [copy(1, T0), copy(2, T0 + timedelta(seconds=1), **{REPL_ORIGIN: "neu"})]
    written = CaptureWriter(FolderStore(tmp_path), "weu").write(batch)
    assert written == [
        f"weu/2024/05/01/11/{batch_name(batch[:1])}",
        f"weu/2024/05/01/12/{batch_name(batch[1:])}",
    ]
    assert files(tmp_path) == {
        written[0]: [{"message_id": "m1", "enqueued_time_utc": "2024-05-01T11:59:59.500Z",
                      "sequence_number": 1, "properties": {}}],
        written[1]: [{"message_id": "m2", "enqueued_time_utc": "2024-05-01T12:00:00.500Z",
                      "sequence_number": 2, "properties": {REPL_ORIGIN: "neu"}}],
    }  # fmt: skip


def test_the_same_batch_again_rewrites_the_same_files_and_a_regrouped_one_adds_a_file(
    tmp_path: Path,
) -> None:
    writer = CaptureWriter(FolderStore(tmp_path), "weu")
    batch = [copy(n, T0 + timedelta(seconds=1 + n)) for n in range(4)]
    first = writer.write(batch)
    again = writer.write(batch)
    assert again == first
    assert len(files(tmp_path)) == 1
    # Redelivered in another grouping: m2 and m3 land in a second file, with the same sequence
    # numbers and times as in the first (how the audit tells a capture retry, see the package).
    writer.write(batch[2:])
    captured = [r for records in files(tmp_path).values() for r in records]
    assert sorted((r["message_id"], r["sequence_number"]) for r in captured) == [
        ("m0", 0), ("m1", 1), ("m2", 2), ("m2", 2), ("m3", 3), ("m3", 3),
    ]  # fmt: skip


def test_hours_are_utc_and_a_copy_without_time_writes_nothing(tmp_path: Path) -> None:
    plus_two = timezone(timedelta(hours=2))
    assert (
        partition_path("weu", datetime(2024, 5, 1, 1, 30, tzinfo=plus_two)) == "weu/2024/04/30/23"
    )
    writer = CaptureWriter(FolderStore(tmp_path), "weu")
    undated = Envelope(message_id="x", enqueued_time_utc=None)
    with pytest.raises(ValueError, match="'x' has no enqueue time"):
        writer.write([copy(1, T0), undated])
    assert files(tmp_path) == {}

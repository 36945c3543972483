"""Event Hubs Capture Avro input (files written with fastavro in Capture's schema)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import fastavro
import pytest

from replication.properties import REPL_ORIGIN, REPL_PATH
from spark._inputs import _capture_with_fastavro, read_region
from spark.dedup_audit import main

pytestmark = pytest.mark.spark

SYSTEM_VALUES = ["long", "double", "string", "bytes"]
CAPTURE_SCHEMA = {
    "type": "record",
    "name": "EventData",
    "namespace": "Microsoft.ServiceBus.Messaging",
    "fields": [
        {"name": "SequenceNumber", "type": "long"},
        {"name": "Offset", "type": "string"},
        {"name": "EnqueuedTimeUtc", "type": "string"},
        {"name": "SystemProperties", "type": {"type": "map", "values": SYSTEM_VALUES}},
        {"name": "Properties", "type": {"type": "map", "values": [*SYSTEM_VALUES, "null"]}},
        {"name": "Body", "type": ["null", "bytes"]},
    ],
}  # fmt: skip


def write_capture(folder: Path, events: list[dict[str, Any]]) -> None:
    folder.mkdir(parents=True)
    with (folder / "0.avro").open("wb") as handle:
        fastavro.writer(handle, fastavro.parse_schema(CAPTURE_SCHEMA), events)


def event(
    sequence: int, time: str, system: dict[str, Any], props: dict[str, Any]
) -> dict[str, Any]:
    return {
        "SequenceNumber": sequence,
        "Offset": str(4096 + sequence),
        "EnqueuedTimeUtc": time,
        "SystemProperties": {"x-opt-sequence-number": sequence, **system},
        "Properties": props,
        "Body": b"{}",
    }


EVENTS = [
    event(1, "11/16/2016 4:44:11 PM", {"message-id": "m1"}, {"unit": "C"}),
    event(2, "11/16/2016 4:44:12 PM", {}, {"MessageId": "m2", "count": 3}),
    event(3, "11/16/2016 4:44:13 PM", {}, {REPL_ORIGIN: "neu", REPL_PATH: "neu;weu"}),
]


def _rows(frame: Any) -> dict[str, Any]:
    return {row["message_id"]: row for row in frame.collect()}


def test_capture_records_get_ids_times_and_string_properties(spark: Any, tmp_path: Path) -> None:
    write_capture(tmp_path / "weu", EVENTS)
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    rows = _rows(read_region(spark, "weu", [str(tmp_path / "weu" / "0.avro")], "capture"))
    assert sorted(rows) == ["4099@weu", "m1", "m2"]
    assert rows["m1"]["enqueued_time_utc"].strftime("%H:%M:%S") == "16:44:11"
    assert rows["m2"]["properties"]["count"] == "3"
    assert rows["4099@weu"]["properties"][REPL_ORIGIN] == "neu"
    assert rows["m1"]["sequence_number"] == 1


def test_fastavro_fallback_decodes_on_the_executors(spark: Any, tmp_path: Path) -> None:
    write_capture(tmp_path / "weu", EVENTS)
    decoded = _capture_with_fastavro(spark, [str(tmp_path / "weu" / "0.avro")]).collect()
    assert sorted(r["Offset"] for r in decoded) == ["4097", "4098", "4099"]
    assert {r["MessageIdSystem"] for r in decoded} == {"m1", None}
    assert next(r for r in decoded if r["Offset"] == "4098")["Properties"]["count"] == "3"


def test_audit_runs_on_capture_input(spark: Any, tmp_path: Path) -> None:
    write_capture(tmp_path / "weu", EVENTS)
    write_capture(tmp_path / "neu", [event(9, "11/16/2016 4:44:10 PM", {"message-id": "m1"}, {})])
    out = tmp_path / "out"
    code = main(["--input", f"weu={tmp_path / 'weu'}", "--input", f"neu={tmp_path / 'neu'}",
                 "--format", "capture", "--output", str(out)])  # fmt: skip
    assert code == 0
    report = json.loads((out / "report.json").read_text())
    assert report["total_records"] == 4
    assert report["unique_messages"] == 3
    assert report["duplicate_records"] == 1
    assert report["lag_seconds"] == {
        "neu->weu": {"count": 1, "p50": 1.0, "p95": 1.0, "p99": 1.0, "max": 1.0}
    }

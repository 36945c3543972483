"""The duplicate audit on generated data with exactly known answers for every report key."""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from replication.properties import REPL_HOPS, REPL_ORIGIN, REPL_ORIGIN_MESSAGE_ID, REPL_PATH
from spark.dedup_audit import main

pytestmark = pytest.mark.spark

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
REPEAT = "capture_repeat"


def record(message_id: str | None, seconds: float, origin: str | None = None,
           path: str | None = None, hops: int | None = None) -> dict[str, Any]:  # fmt: skip
    properties: dict[str, str] = {}
    if origin:
        properties[REPL_ORIGIN] = origin
        properties[REPL_PATH] = path or origin
        properties[REPL_HOPS] = str(hops if hops is not None else 1)
    moment = T0 + timedelta(seconds=seconds)
    return {
        "message_id": message_id,
        "enqueued_time_utc": moment.isoformat().replace("+00:00", "Z"),
        "properties": properties,
        "body": "{}",
    }


def replica(message_id: str, seconds: float, origin: str, here: str) -> dict[str, Any]:
    return record(message_id, seconds, origin, f"{origin};{here}", 1)


# Three regions, all-active; every case of the report appears once (see the expectations).
REGIONS: dict[str, list[dict[str, Any]]] = {
    "weu": [
        record("m1", 0),
        replica("m2", 10.5, "neu", "weu"),
        replica("m3", 15, "eus", "weu"),  # -5 s: clock skew within the 30 s watermark
        record("m4", 30),
        record("m5", 40),
        record("m5", 42, "weu", "weu;neu;weu", 2),  # came back to weu: a loop
        replica("m6", 51, "neu", "weu"),
        record(None, 5),  # invalid: no message id
    ],
    "neu": [
        replica("m1", 1, "weu", "neu"),
        record("m2", 10),
        replica("m3", -11, "eus", "neu"),  # -31 s: skew beyond the watermark
        replica("m5", 41, "weu", "neu"),
        record("m6", 50),
        # m4 never arrived in neu: missing
    ],
    "eus": [
        replica("m1", 2, "weu", "eus"),
        replica("m2", 11.5, "neu", "eus"),
        replica("m2", 13, "neu", "eus"),  # in-region duplicate
        record("m3", 20),  # 31 s after m3's first copy (neu): late for a streaming dedup
        replica("m4", 31, "weu", "eus"),
        replica("m5", 41.5, "weu", "eus"),
        replica("m6", 150, "neu", "eus"),  # 100 s after the origin: late
    ],
}


def write_inputs(root: Path, regions: dict[str, list[dict[str, Any]]]) -> list[str]:
    arguments = []
    for region, records in regions.items():
        folder = root / region
        folder.mkdir(parents=True)
        (folder / "part-0.json").write_text("\n".join(json.dumps(r) for r in records) + "\n")
        arguments += ["--input", f"{region}={folder}"]
    return arguments


def run(spark: Any, tmp_path: Path, *extra: str, regions: Any = None) -> dict[str, Any]:
    inputs = write_inputs(tmp_path / "in", regions or REGIONS)
    out = tmp_path / "out"
    code = main([*inputs, "--format", "json", "--watermark", "30 seconds", "--output", str(out),
                 *extra])  # fmt: skip
    assert code == 0
    report: dict[str, Any] = json.loads((out / "report.json").read_text())
    return report


def duplicate_rows(spark: Any, tmp_path: Path) -> list[Any]:
    return list(spark.read.parquet(str(tmp_path / "out" / "duplicates")).collect())


def assert_duplicates_add_up(report: dict[str, Any], duplicates: list[Any]) -> None:
    """``duplicates/`` holds, per region, one row per unexpected duplicate and per capture
    repeat of the report: its rows are those figures, copy by copy."""
    for region, figures in report["regions"].items():
        kinds = [r["kind"] for r in duplicates if r["region"] == region]
        unexpected = sum(kind in ("in_region", "unexpected_region") for kind in kinds)
        assert unexpected == figures["unexpected_duplicates"], region
        assert kinds.count("in_region") == figures["in_region_duplicates"], region
        assert kinds.count("capture_repeat") == figures["capture_repeats"], region
    assert len(duplicates) == report["unexpected_duplicates"] + report["capture_repeats"]


def test_report_has_exact_answers_for_every_key(spark: Any, tmp_path: Path) -> None:
    report = run(spark, tmp_path)
    assert report["total_records"] == 19
    assert report["unique_messages"] == 6
    assert report["duplicate_records"] == 13
    # All-active: every first copy outside the origin is a replica the topology sends; the only
    # unexpected duplicates are the two in-region ones (m5 in weu, m2 in eus).
    assert report["expected_replicas"] == 11
    assert report["unexpected_duplicates"] == 2
    assert report["invalid_records"] == 1
    assert report["regions"] == {
        "weu": {"records": 7, "unique_messages": 6, "expected_replicas": 3,
                "capture_repeats": 0, "in_region_duplicates": 1, "unexpected_duplicates": 1,
                "missing": 0},
        "neu": {"records": 5, "unique_messages": 5, "expected_replicas": 3,
                "capture_repeats": 0, "in_region_duplicates": 0, "unexpected_duplicates": 0,
                "missing": 1},
        "eus": {"records": 7, "unique_messages": 6, "expected_replicas": 5,
                "capture_repeats": 0, "in_region_duplicates": 1, "unexpected_duplicates": 1,
                "missing": 0},
    }  # fmt: skip
    assert report["missing_total"] == 1
    assert report["loops"] == 1
    assert report["clock_skew_suspects"] == 1
    assert report["late_records"] == 2
    assert report["lag_seconds"] == {
        "eus->neu": {"count": 1, "p50": -31.0, "p95": -31.0, "p99": -31.0, "max": -31.0},
        "eus->weu": {"count": 1, "p50": -5.0, "p95": -5.0, "p99": -5.0, "max": -5.0},
        "neu->eus": {"count": 2, "p50": 50.75, "p95": 95.075, "p99": 99.015, "max": 100.0},
        "neu->weu": {"count": 2, "p50": 0.75, "p95": 0.975, "p99": 0.995, "max": 1.0},
        "weu->eus": {"count": 3, "p50": 1.5, "p95": 1.95, "p99": 1.99, "max": 2.0},
        "weu->neu": {"count": 2, "p50": 1.0, "p95": 1.0, "p99": 1.0, "max": 1.0},
    }
    assert set(report) == {
        "total_records", "unique_messages", "duplicate_records", "expected_replicas",
        "unexpected_duplicates", "capture_repeats", "regions", "missing_total", "loops",
        "lag_seconds",
        "clock_skew_suspects", "late_records", "invalid_records",
    }  # fmt: skip


def test_unique_keeps_the_earliest_copy_and_duplicates_list_only_unexpected_copies(
    spark: Any, tmp_path: Path
) -> None:
    """All-active: the replicas are expected, so ``duplicates/`` lists the two in-region
    duplicates alone; the two late copies (replicas) are counted, not listed."""
    report = run(spark, tmp_path)
    unique = {
        r["message_id"]: r for r in spark.read.parquet(str(tmp_path / "out" / "unique")).collect()
    }
    assert sorted(unique) == ["m1", "m2", "m3", "m4", "m5", "m6"]
    assert unique["m3"]["region"] == "neu"  # the skewed replica is the earliest copy
    assert unique["m2"]["region"] == "neu"
    duplicates = duplicate_rows(spark, tmp_path)
    listed = {(r["message_id"], r["region"], r["kind"], r["first_region"], r["late"])
              for r in duplicates}  # fmt: skip
    assert listed == {("m5", "weu", "in_region", "weu", False),
                      ("m2", "eus", "in_region", "neu", False)}  # fmt: skip
    assert {r["message_id"]: r["enqueued_time_utc"].second for r in duplicates} == {
        "m5": 42, "m2": 13,
    }  # fmt: skip
    assert report["late_records"] == 2  # m3 and m6 in eus: replicas, late but no duplicates
    assert_duplicates_add_up(report, duplicates)
    page = (tmp_path / "out" / "report.html").read_text()
    assert page.count("<svg") >= 3
    assert "http" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")


def test_ties_in_time_go_to_the_region_name_and_one_copy_per_region_is_kept(
    spark: Any, tmp_path: Path
) -> None:
    def copy(message_id: str, sequence: int | None, origin: str | None = None) -> dict[str, Any]:
        item = record(message_id, 0, origin) if origin else record(message_id, 0)
        return {**item, "sequence_number": sequence}

    regions = {
        # Same microsecond everywhere: "a" wins over "b" by name. Within one region, exactly one
        # of the simultaneous copies is kept (which one is unspecified) and the rest are listed.
        "b": [copy("x", 7, "a"), copy("x", 3, "a"), copy("y", 9), copy("y", None)],
        "a": [copy("x", 50), copy("z", 4), copy("z", 4), copy("z", 2)],
    }
    report = run(spark, tmp_path, regions=regions)
    assert report["unique_messages"] == 3
    assert report["duplicate_records"] == 5
    unique = {
        r["message_id"]: r for r in spark.read.parquet(str(tmp_path / "out" / "unique")).collect()
    }
    assert (unique["x"]["region"], unique["x"]["sequence_number"]) == ("a", 50)
    assert unique["x"]["copies"] == 3
    assert unique["x"]["origin"] == "a"
    assert unique["y"]["region"] == "b"
    assert unique["z"]["region"] == "a"
    duplicates = duplicate_rows(spark, tmp_path)
    listed = [(r["message_id"], r["region"], r["sequence_number"] or 0) for r in duplicates]
    kept = [(m, unique[m]["region"], unique[m]["sequence_number"] or 0) for m in ("x", "y", "z")]
    every_copy = [("x", "a", 50), ("x", "b", 3), ("x", "b", 7), ("y", "b", 0), ("y", "b", 9),
                  ("z", "a", 2), ("z", "a", 4), ("z", "a", 4)]  # fmt: skip
    # Each copy once, in one folder, but x's first copy in b: an expected replica, in neither.
    assert not Counter(listed + kept) - Counter(every_copy)
    assert list((Counter(every_copy) - Counter(listed + kept)).elements()) in (
        [("x", "b", 3)], [("x", "b", 7)],
    )  # fmt: skip
    assert {(r["first_region"], r["late"]) for r in duplicates} == {("a", False), ("b", False)}
    # z: three copies in one microsecond, two of them equal (one copy read twice).
    assert sorted(r["kind"] for r in duplicates if r["message_id"] == "z") == [
        "capture_repeat", "in_region",
    ]  # fmt: skip
    assert_duplicates_add_up(report, duplicates)


def test_one_copy_captured_twice_is_a_capture_repeat_not_a_duplicate(
    spark: Any, tmp_path: Path
) -> None:
    """A Service Bus capture redelivered a batch it had written writes its copies again: in one
    region, the same message, enqueue time and sequence number (replication.capture). Those are
    capture repeats, left out of the duplicates; a second enqueue of the message (another
    sequence number, even in the same microsecond) stays an in-region duplicate. ``duplicates/``
    lists both kinds, the repeats as ``capture_repeat``, and no replica."""

    def copy(message_id: str, seconds: float, sequence: int, origin: str | None = None) -> Any:
        item = (
            replica(message_id, seconds, origin, "neu") if origin else record(message_id, seconds)
        )
        return {**item, "sequence_number": sequence}

    regions = {
        "weu": [
            copy("m1", 0, 1), copy("m1", 0, 1),  # captured twice
            copy("m2", 1, 2), copy("m2", 1, 5),  # enqueued twice in the same microsecond
            copy("m3", 2, 3), copy("m3", 2, 3), copy("m3", 2, 3),  # captured three times
        ],
        "neu": [copy("m1", 1, 10, "weu"), copy("m2", 2, 11, "weu"), copy("m3", 3, 12, "weu")],
    }  # fmt: skip
    report = run(spark, tmp_path, regions=regions)
    assert report["regions"]["weu"] == {
        "records": 7, "unique_messages": 3, "expected_replicas": 0, "capture_repeats": 3,
        "in_region_duplicates": 1, "unexpected_duplicates": 1, "missing": 0,
    }  # fmt: skip
    assert report["regions"]["neu"]["capture_repeats"] == 0
    assert (report["capture_repeats"], report["unexpected_duplicates"]) == (3, 1)
    assert report["duplicate_records"] == 7
    duplicates = duplicate_rows(spark, tmp_path)
    weu = sorted(
        (r["message_id"], r["sequence_number"], r["kind"])
        for r in duplicates
        if r["region"] == "weu"
    )
    assert weu in (
        [("m1", 1, REPEAT), ("m2", 2, "in_region"), ("m3", 3, REPEAT), ("m3", 3, REPEAT)],
        [("m1", 1, REPEAT), ("m2", 5, "in_region"), ("m3", 3, REPEAT), ("m3", 3, REPEAT)],
    )
    assert_duplicates_add_up(report, duplicates)  # neu's three replicas are not listed


def test_late_copies_are_counted_whether_listed_or_not(spark: Any, tmp_path: Path) -> None:
    """Three copies in one region make a message's summary incomplete (``unlisted_copies``):
    its late second and third copies are counted from the second read, its late replica from
    the summary, and only the two in-region copies are listed."""
    regions = {
        "a": [record("x", 0), record("x", 40), record("x", 80), record("y", 0)],
        "b": [replica("x", 100, "a", "b"), replica("y", 45, "a", "b")],
    }
    report = run(spark, tmp_path, regions=regions)
    assert report["late_records"] == 4  # x at 40 and 80 in a, at 100 in b; y at 45 in b
    duplicates = duplicate_rows(spark, tmp_path)
    assert sorted((r["message_id"], r["region"], r["kind"], r["late"]) for r in duplicates) == [
        ("x", "a", "in_region", True), ("x", "a", "in_region", True),
    ]  # fmt: skip
    assert_duplicates_add_up(report, duplicates)


def test_without_duplicates_the_duplicates_folder_is_an_empty_dataset(
    spark: Any, tmp_path: Path
) -> None:
    report = run(spark, tmp_path, regions={"a": [record("x", 0)], "b": [record("y", 1)]})
    assert report["duplicate_records"] == 0
    duplicates = spark.read.parquet(str(tmp_path / "out" / "duplicates"))
    assert duplicates.count() == 0
    assert {"first_enqueued_time_utc", "kind"} <= set(duplicates.columns)


def test_a_malformed_hop_count_is_no_loop_and_no_failure(spark: Any, tmp_path: Path) -> None:
    replica_with_bad_hops = {**replica("x", 1, "a", "b")}
    replica_with_bad_hops["properties"] = {**replica_with_bad_hops["properties"], REPL_HOPS: "many"}
    report = run(spark, tmp_path, regions={"a": [record("x", 0)], "b": [replica_with_bad_hops]})
    assert report["loops"] == 0
    assert report["lag_seconds"]["a->b"]["count"] == 1


@pytest.mark.parametrize(
    ("path", "hops", "looped"),
    [
        ("a;b", "1", 0),
        ("a;a", "1", 1),  # two entries, the same namespace twice
        ("a;b;c;b", "1", 1),  # longer paths: any namespace twice
        ("a;b;c", "1", 0),
        ("a;;b", "1", 0),  # empty entries are no namespace
        ("a;", "1", 0),
        (";", "1", 0),
        ("a", "1", 0),
        ("a;b", "3", 1),  # more hops than 3 regions allow
    ],
)
def test_the_loop_flag_of_a_copy(spark: Any, path: str, hops: str, looped: int) -> None:
    from spark._audit import RegionIndex, copy_keys

    copy = ("b", "x", T0, {REPL_ORIGIN: "a", REPL_PATH: path, REPL_HOPS: hops}, 1)
    records = spark.createDataFrame(
        [copy], "region string, message_id string, enqueued_time_utc timestamp, "
        "properties map<string,string>, sequence_number long",
    )  # fmt: skip
    row = copy_keys(records, RegionIndex.of(["a", "b", "c"])).first()
    assert row is not None
    assert (row["o"], row["looped"]) == (0, looped)


def test_a_parquet_time_that_is_not_a_timestamp_is_an_invalid_record(
    spark: Any, tmp_path: Path
) -> None:
    rows = [("x", "2024-05-01T12:00:00Z"), ("y", "yesterday-ish")]
    for region in ("a", "b"):
        frame = spark.createDataFrame(rows, "message_id string, enqueued_time_utc string")
        frame.write.parquet(str(tmp_path / "in" / region))
    code = main(["--input", f"a={tmp_path / 'in' / 'a'}", "--input", f"b={tmp_path / 'in' / 'b'}",
                 "--format", "parquet", "--output", str(tmp_path / "out")])  # fmt: skip
    assert code == 0
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert (report["invalid_records"], report["total_records"]) == (2, 2)


def test_missing_follows_expected_pairs(spark: Any, tmp_path: Path) -> None:
    report = run(spark, tmp_path, "--expect", "weu:neu", "--expect", "neu:eus")
    assert {r: v["missing"] for r, v in report["regions"].items()} == {"weu": 0, "neu": 1, "eus": 0}
    # Only weu->neu and neu->eus are replicated: a copy elsewhere is one nobody sent there.
    assert {r: v["expected_replicas"] for r, v in report["regions"].items()} == {
        "weu": 0, "neu": 2, "eus": 2,
    }  # fmt: skip
    assert {r: v["unexpected_duplicates"] for r, v in report["regions"].items()} == {
        "weu": 4, "neu": 1, "eus": 4,
    }  # fmt: skip
    assert (report["expected_replicas"], report["unexpected_duplicates"]) == (4, 9)
    assert report["expected_replicas"] + report["unexpected_duplicates"] == 13
    duplicates = duplicate_rows(spark, tmp_path)
    assert_duplicates_add_up(report, duplicates)
    # m3 (from eus) in weu: a first copy where the topology sends none; m2 twice in eus.
    assert ("m3", "weu", "unexpected_region") in {
        (r["message_id"], r["region"], r["kind"]) for r in duplicates
    }
    only_eus = run(spark, tmp_path / "second", "--expect", "eus:weu")
    assert only_eus["missing_total"] == 0


def test_a_message_missing_from_an_expected_region_is_counted(spark: Any, tmp_path: Path) -> None:
    regions = {
        "a": [record("x", 0), record("y", 1)],
        "b": [replica("x", 1, "a", "b")],
    }
    report = run(spark, tmp_path, "--expect", "a:b", regions=regions)
    assert report["regions"]["b"]["missing"] == 1
    assert report["regions"]["a"]["missing"] == 0


def test_streaming_counts_a_copy_outside_the_watermark_as_late(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "in"
    first = root / "r1"
    second = root / "r2"
    first.mkdir(parents=True)
    second.mkdir(parents=True)
    (first / "0.json").write_text(
        "\n".join(json.dumps(r) for r in [record("a", 0), record("b", 0), record("c", 200)])
    )
    # One file per micro-batch: the copy of "a" comes within the watermark; "d" moves the
    # watermark on, so that the state of "b" is evicted before its copy, 100 s later, arrives.
    files = [replica("a", 5, "r1", "r2"), record("d", 300), replica("b", 100, "r1", "r2")]
    now = time.time()
    for index, item in enumerate(files):
        path = second / f"{index}.json"
        path.write_text(json.dumps(item))
        os.utime(path, (now - 60 + index, now - 60 + index))
    out = tmp_path / "out"
    arguments = ["--input", f"r1={first}", "--input", f"r2={second}", "--format", "json",
                 "--watermark", "30 seconds", "--output", str(out), "--streaming"]  # fmt: skip
    assert main(arguments) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["late_records"] == 1
    assert report["streaming"]["micro_batches"] >= 3
    assert report["streaming"]["max_state_rows"] >= 1
    unique = sorted(r["message_id"] for r in spark.read.parquet(str(out / "unique")).collect())
    assert unique == ["a", "b", "c", "d"]

    # The same audit again into the same folder streams the inputs from the start (an old
    # checkpoint would resume after the files already read and count nothing late).
    assert main(arguments) == 0
    again = json.loads((out / "report.json").read_text())
    assert again["late_records"] == 1
    assert again["streaming"]["dropped_by_watermark"] == report["streaming"]["dropped_by_watermark"]


def test_streaming_reads_the_hourly_folders_a_capture_task_writes(
    spark: Any, tmp_path: Path
) -> None:
    """``{region}/yyyy/MM/dd/HH/*.jsonl``, as the capture tasks write it (the demo's audit
    input): the stream reads the subfolders, as the batch audit does."""
    inputs = []
    for region, records in {"weu": [record("a", 0), record("b", 1)],
                            "neu": [replica("a", 2, "weu", "neu")]}.items():  # fmt: skip
        hour = tmp_path / "capture" / region / "2024" / "05" / "01" / "12"
        hour.mkdir(parents=True)
        (hour / "batch-0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
        inputs += ["--input", f"{region}={tmp_path / 'capture' / region}"]
    out = tmp_path / "out"
    assert main([*inputs, "--output", str(out), "--streaming", "--expect", "weu:neu"]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["total_records"] == 3
    assert report["streaming"]["micro_batches"] == 2
    unique = sorted(r["message_id"] for r in spark.read.parquet(str(out / "unique")).collect())
    assert unique == ["a", "b"]


def test_a_bad_input_path_is_a_clear_error(spark: Any, tmp_path: Path, caplog: Any) -> None:
    code = main(["--input", f"x={tmp_path / 'absent'}", "--output", str(tmp_path / "out")])
    assert code == 2
    assert "region x" in caplog.text


def test_session_settings_are_restored_after_the_audit_changes_them(spark: Any) -> None:
    from spark.dedup_audit import session_conf

    key, unset_key = "spark.sql.parquet.outputTimestampType", "spark.replication.test.unset"
    spark.conf.set(key, "INT96")
    with session_conf(spark, {key: "TIMESTAMP_MICROS", unset_key: "x"}):
        assert (spark.conf.get(key), spark.conf.get(unset_key)) == ("TIMESTAMP_MICROS", "x")
    assert spark.conf.get(key) == "INT96"
    assert spark.conf.get(unset_key, None) is None
    spark.conf.unset(key)


def test_a_replica_with_a_new_message_id_is_matched_by_its_original_id(
    spark: Any, tmp_path: Path
) -> None:
    """A user transform that set a MessageId: the runtime wrote repl-origin-message-id."""
    renamed = replica("order-7", 1, "a", "b")
    renamed["properties"][REPL_ORIGIN_MESSAGE_ID] = "x"
    regions = {"a": [record("x", 0)], "b": [renamed]}
    report = run(spark, tmp_path, "--expect", "a:b", regions=regions)
    assert report["unique_messages"] == 1
    assert report["regions"]["b"]["missing"] == 0

"""``--since`` / ``--until``: a day of hourly capture partitions, audited two hours at a time.

The captures are this library's layout (``{region}/yyyy/MM/dd/HH/...``, as the capture task
writes them). Only the partitions of the window and its watermark margin are read: the plan's
own file listing (``DataFrame.inputFiles``) says so, and the report states its window.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from replication.properties import REPL_HOPS, REPL_ORIGIN, REPL_PATH
from spark._inputs import read_inputs, select_inputs
from spark._storage import files_of
from spark._window import Window
from spark.dedup_audit import main
from tests.spark.test_report_page import Page, leaves, number

pytestmark = pytest.mark.spark

DAY = datetime(2024, 5, 1, tzinfo=UTC)


def copy(message_id: str, at: datetime, origin: str | None = None) -> dict[str, Any]:
    properties = {}
    if origin:
        properties = {REPL_ORIGIN: origin, REPL_PATH: f"{origin};neu", REPL_HOPS: "1"}
    return {
        "message_id": message_id,
        "enqueued_time_utc": at.isoformat().replace("+00:00", "Z"),
        "properties": properties,
    }


def write_day(root: Path) -> list[str]:
    """Every hour weu publishes at :00:10 and :59:50, neu at :30:00, each replicated to the
    other region 1 s later, except the :59:50 one, whose replica lands 15 s later, in the next
    hour's partition (of the next day after 23:59:50)."""
    partitions: dict[tuple[str, datetime], list[dict[str, Any]]] = {}

    def add(region: str, record: dict[str, Any], at: datetime) -> None:
        partition = at.replace(minute=0, second=0, microsecond=0)
        partitions.setdefault((region, partition), []).append(record)

    for hour in range(24):
        start = DAY + timedelta(hours=hour)
        for message_id, origin, at, lag in (
            (f"w{hour}a", "weu", start + timedelta(seconds=10), 1),
            (f"n{hour}", "neu", start + timedelta(minutes=30), 1),
            (f"w{hour}b", "weu", start + timedelta(minutes=59, seconds=50), 15),
        ):
            other = "neu" if origin == "weu" else "weu"
            add(origin, copy(message_id, at), at)
            replica_at = at + timedelta(seconds=lag)
            add(other, copy(message_id, replica_at, origin), replica_at)
    for (region, partition), records in partitions.items():
        folder = root / region / f"{partition:%Y/%m/%d/%H}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "batch-0001.json").write_text("".join(json.dumps(r) + "\n" for r in records))
    return [a for region in ("weu", "neu") for a in ("--input", f"{region}={root / region}")]


WINDOW = ["--since", "2024-05-01T10:00:00Z", "--until", "2024-05-01T12:00:00Z"]


def test_a_window_reads_only_its_hours_and_the_margin(spark: Any, tmp_path: Path) -> None:
    inputs = write_day(tmp_path / "in")
    out = tmp_path / "out"
    code = main([*inputs, *WINDOW, "--watermark", "30 seconds", "--output", str(out)])
    assert code == 0
    report = json.loads((out / "report.json").read_text())
    # Hours 10 and 11: 3 messages each. w9b (09:59:50, replica at 10:00:05) is read in the
    # margin and left to the window before; w11b's replica at 12:00:05 is found in the margin.
    assert report["unique_messages"] == 6
    assert report["total_records"] == 12
    assert (report["expected_replicas"], report["unexpected_duplicates"]) == (6, 0)
    assert report["missing_total"] == 0
    unique = sorted(r["message_id"] for r in spark.read.parquet(str(out / "unique")).collect())
    assert unique == ["n10", "n11", "w10a", "w10b", "w11a", "w11b"]
    # 09:59:30 to 12:00:30: hours 09-12 of each region, 8 of 49 files.
    assert report["window"] == {
        "since": "2024-05-01T10:00:00Z",
        "until": "2024-05-01T12:00:00Z",
        "margin_seconds": 30.0,
        "files_read": 8,
        "files_skipped": 41,
    }
    page = Page((out / "report.html").read_text())
    figures = dict(page.figures)
    expected = leaves(report)
    assert {key for key in figures if key.startswith("window.")} == {
        key for key in expected if key.startswith("window.")
    }
    assert figures["window.since"] == "2024-05-01T10:00:00Z"
    assert number(figures["window.files_skipped"]) == 41
    assert "Messages first enqueued from 2024-05-01T10:00:00Z until" in page.words


def test_the_plan_lists_only_the_partitions_of_the_window(spark: Any, tmp_path: Path) -> None:
    """The files Spark's scan will read (``inputFiles``: the plan's file listing), for the window
    with a 30-second margin and for a window open at one end."""
    write_day(tmp_path / "in")
    folders = {region: str(tmp_path / "in" / region) for region in ("weu", "neu")}

    def hours_read(window: Window) -> list[str]:
        selected = select_inputs(files_of(spark), folders, "json", window, timedelta(seconds=30))
        records = read_inputs(spark, {r: s.files for r, s in selected.items()}, "json")
        return sorted(
            "/".join(path.split("/")[-6:-1]) for path in records.inputFiles()
        )  # region/yyyy/MM/dd/HH

    window = Window(datetime(2024, 5, 1, 10, tzinfo=UTC), datetime(2024, 5, 1, 12, tzinfo=UTC))
    assert hours_read(window) == sorted(
        f"{region}/2024/05/01/{hour:02d}" for region in ("weu", "neu") for hour in (9, 10, 11, 12)
    )
    late = Window(datetime(2024, 5, 1, 23, 30, tzinfo=UTC), None)
    assert hours_read(late) == sorted(
        ["weu/2024/05/01/23", "neu/2024/05/01/23", "neu/2024/05/02/00"]
    )

"""The streaming audit (``--streaming``) replaying an outage: copies of one message hours apart.

The captures are JSON files, one per region and hour of the region's own enqueue time, as a
capture writes them (Event Hubs Capture writes a file per time window, empty ones included);
replicas carry the replication properties that ``replication.properties.stamp`` writes.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from replication.envelope import Envelope
from replication.properties import (
    REPL_ENQUEUE_TIME_DOCS_SPELLING,
    REPL_ENQUEUED_TIME,
    REPL_ORIGIN_MESSAGE_ID,
    stamp,
)
from spark.dedup_audit import main

pytestmark = pytest.mark.spark

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)
REPLICATION_LAG = timedelta(seconds=1)
PARTITION = (T0 + HOUR, T0 + 3 * HOUR)
"""For 2 hours (the tasks' outage tolerance) weu and neu cannot reach each other: what either
publishes meanwhile is replicated when the partition heals, as the backlog drains."""
LAST_HOUR = 6
STRAGGLER = "weu-0-20"
STRAGGLER_REDRIVEN = T0 + 6 * HOUR + timedelta(minutes=10)
"""A second copy of ``weu-0-20`` (published at 12:20) reaches neu at 18:10, e.g. redriven from a
parking queue: later than the 2-hour watermark, and after the stream has moved on by more than
twice that, so that a watermark on the copies' own enqueue time would have forgotten the message
and emitted this copy again."""
RENAMED = "neu-1-20"
"""Its backlog copy in weu has a MessageId of its own and ``repl-origin-message-id``."""

TOPOLOGY = {
    "namespaces": [
        {
            "name": name,
            "region": name,
            "kind": "servicebus",
            "fullyQualifiedNamespace": f"contoso-{name}.servicebus.windows.net",
            "connection": f"SB_{name.upper()}",
            "topics": [{"name": "orders"}],
        }
        for name in ("weu", "neu")
    ],
    "tasks": [
        {
            "name": f"orders-{source}-to-{target}",
            "pattern": "all_active",
            "source": {"namespace": source, "entity": "orders", "subscription": "replication"},
            "targets": [{"namespace": target, "entity": "orders"}],
            "retry": {"outageTolerance": "PT2H"},
        }
        for source, target in (("weu", "neu"), ("neu", "weu"))
    ],
}


@dataclass
class Capture:
    """What one region captured, by the hour of its own enqueue time."""

    region: str
    hours: dict[int, list[dict[str, Any]]] = field(default_factory=dict)

    def add(self, message: Envelope) -> None:
        assert message.enqueued_time_utc is not None
        hour = (message.enqueued_time_utc - T0) // HOUR
        self.hours.setdefault(hour, []).append(
            {
                "message_id": message.message_id,
                "enqueued_time_utc": message.enqueued_time_utc.isoformat(),
                "properties": {k: str(v) for k, v in message.application_properties.items()},
                "sequence_number": message.sequence_number,
            }
        )

    def write(self, folder: Path) -> None:
        """One file per hour, empty hours included, modified in hour order (the file source
        reads them oldest first, one per micro-batch)."""
        folder.mkdir(parents=True)
        start = time.time() - 600
        for hour in range(LAST_HOUR + 1):
            path = folder / f"{hour:02d}.json"
            path.write_text("".join(json.dumps(r) + "\n" for r in self.hours.get(hour, [])))
            os.utime(path, (start + hour, start + hour))


def replicate(message: Envelope, source: str, target: str, at: datetime, sequence: int) -> Envelope:
    """The replica ``target`` enqueues at ``at``, stamped as the replication tasks stamp it."""
    replica = stamp(message, source_namespace=source, target_namespace=target)
    return replica.replace(enqueued_time_utc=at, sequence_number=sequence)


def outage_captures() -> dict[str, Capture]:
    """Each region publishes 3 messages an hour (weu at :00, :20, :40, neu 5 minutes later),
    replicated to the other in 1 s, except across the partition: those wait until it heals
    and drain 100 ms apart."""
    captures = {region: Capture(region) for region in ("weu", "neu")}
    backlog: list[tuple[str, Envelope]] = []
    sequence = 0
    for hour in range(LAST_HOUR + 1):
        for region, offset in (("weu", 0), ("neu", 5)):
            for minute in (0, 20, 40):
                sequence += 1
                published = T0 + hour * HOUR + timedelta(minutes=minute + offset)
                message = Envelope(
                    message_id=f"{region}-{hour}-{minute}",
                    enqueued_time_utc=published,
                    sequence_number=sequence,
                )
                captures[region].add(message)
                if PARTITION[0] <= published < PARTITION[1]:
                    backlog.append((region, message))
                    continue
                other = "neu" if region == "weu" else "weu"
                at = published + REPLICATION_LAG
                captures[other].add(replicate(message, region, other, at, sequence))
    for index, (region, message) in enumerate(sorted(backlog, key=_published)):
        other = "neu" if region == "weu" else "weu"
        at = PARTITION[1] + timedelta(milliseconds=100 * index)
        replica = replicate(message, region, other, at, 10_000 + index)
        if message.message_id == RENAMED:  # a user transform gave the replica its own id
            replica = replica.replace(message_id=f"order-{RENAMED}")
            replica = replica.with_properties({REPL_ORIGIN_MESSAGE_ID: RENAMED})
        captures[other].add(replica)
    original = next(m for m in captures["weu"].hours[0] if m["message_id"] == STRAGGLER)
    redriven = Envelope(
        message_id=STRAGGLER,
        enqueued_time_utc=datetime.fromisoformat(original["enqueued_time_utc"]),
        sequence_number=original["sequence_number"],
    )
    captures["neu"].add(replicate(redriven, "weu", "neu", STRAGGLER_REDRIVEN, 20_000))
    return captures


def _published(item: tuple[str, Envelope]) -> datetime:
    assert item[1].enqueued_time_utc is not None
    return item[1].enqueued_time_utc


def test_copies_hours_apart_after_an_outage_give_one_row_and_a_straggler_is_counted(
    spark: Any, tmp_path: Path
) -> None:
    captures = outage_captures()
    arguments = []
    for region, capture in captures.items():
        capture.write(tmp_path / "in" / region)
        arguments += ["--input", f"{region}={tmp_path / 'in' / region}"]
    topology = tmp_path / "topology.json"
    topology.write_text(json.dumps(TOPOLOGY))
    out = tmp_path / "out"

    code = main([*arguments, "--format", "json", "--output", str(out), "--streaming",
                 "--topology", str(topology)])  # fmt: skip

    assert code == 0
    originals = {
        record["message_id"]: datetime.fromisoformat(record["enqueued_time_utc"])
        for capture in captures.values()
        for records in capture.hours.values()
        for record in records
        if not record["properties"]
    }
    published = sorted(originals)
    assert len(published) == 2 * 3 * (LAST_HOUR + 1)
    # The backlog really is hours late in the copies' own enqueue times.
    backlog_copy = next(
        r for r in captures["neu"].hours[3] if r["message_id"] == "weu-1-0" and r["properties"]
    )
    own = datetime.fromisoformat(backlog_copy["enqueued_time_utc"])
    assert own - (T0 + HOUR) == 2 * HOUR
    # What the stream emitted, before any reduction: one row per message, the first copy.
    streamed = spark.read.parquet(str(out / "stream_unique")).collect()
    assert sorted(row["message_id"] for row in streamed) == published
    # A message published during the partition is emitted as its original, which the stream
    # met micro-batches before its copy. (Copies that meet in one micro-batch: which one is
    # emitted is not specified.)
    emitted = {row["message_id"]: row["region"] for row in streamed}
    during = [m for m, at in originals.items() if PARTITION[0] <= at < PARTITION[1]]
    assert len(during) == 12
    assert {m: emitted[m] for m in during} == {m: m.split("-")[0] for m in during}
    report = json.loads((out / "report.json").read_text())
    assert report["streaming"]["watermark_seconds"] == 2 * 3600  # the topology's tolerance
    assert report["streaming"]["dropped_by_watermark"] == 1  # the redriven straggler
    assert report["late_records"] == 1
    assert report["unique_messages"] == len(published)
    unique = spark.read.parquet(str(out / "unique")).collect()
    assert sorted(row["message_id"] for row in unique) == published


def test_the_event_time_is_the_origins_enqueue_time_whoever_stamped_it(spark: Any) -> None:
    """Our stamp (ISO-8601, ms), the .NET library's (``ToString("u")``, its Service Bus tasks'
    unscheduled ``ScheduledEnqueueTime`` of year 1), the documentation's spelling, two hops."""
    from spark._streaming import origin_enqueued_time

    own = T0 + 3 * HOUR
    origin = Envelope(message_id="x", enqueued_time_utc=T0, sequence_number=1)
    first = replicate(origin, "weu", "neu", T0 + HOUR, 2)
    second = replicate(first, "neu", "eus", T0 + 2 * HOUR, 3)
    cases = {
        "original": ({}, own),
        "ours": ({REPL_ENQUEUED_TIME: first.application_properties[REPL_ENQUEUED_TIME]}, T0),
        "two hops": ({REPL_ENQUEUED_TIME: second.application_properties[REPL_ENQUEUED_TIME]}, T0),
        "dotnet": ({REPL_ENQUEUED_TIME: "2024-05-01 12:00:00Z"}, T0),
        "docs spelling": ({REPL_ENQUEUE_TIME_DOCS_SPELLING: "2024-05-01 12:00:00Z"}, T0),
        "unscheduled": ({REPL_ENQUEUED_TIME: "0001-01-01 00:00:00Z"}, own),
        "not a time": ({REPL_ENQUEUED_TIME: "soon"}, own),
        "empty": ({REPL_ENQUEUED_TIME: ";2024-05-01T13:00:00.000Z"}, own),
    }
    rows = [(name, own, properties) for name, (properties, _) in cases.items()]
    frame = spark.createDataFrame(
        rows, "case string, enqueued_time_utc timestamp, properties map<string,string>"
    )
    found = {
        row["case"]: row["t"].replace(tzinfo=UTC)
        for row in frame.select("case", origin_enqueued_time().alias("t")).collect()
    }
    assert found == {name: expected for name, (_, expected) in cases.items()}


def test_a_bad_topology_is_a_clear_error_before_spark_starts(tmp_path: Path, caplog: Any) -> None:
    broken = tmp_path / "topology.json"
    broken.write_text(json.dumps({"namespaces": [], "tasks": []}))
    inputs = ["--input", f"weu={tmp_path}", "--output", str(tmp_path / "out")]
    assert main([*inputs, "--streaming", "--topology", str(broken)]) == 2
    assert str(broken) in caplog.text
    assert "namespaces" in caplog.text
    assert main([*inputs, "--streaming", "--topology", str(tmp_path / "absent.json")]) == 2
    assert "absent.json" in caplog.text
    with pytest.raises(SystemExit) as refused:
        main([*inputs, "--topology", str(broken)])
    assert refused.value.code == 2

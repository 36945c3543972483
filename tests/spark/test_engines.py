"""One audit, every Spark engine that runs here: the same Capture (Avro) files audited on
``local[2]`` (this process), on a standalone cluster of a master and two workers started from
pyspark's ``spark-class`` (submitted with ``spark-submit --master spark://...``, executors in
JVMs and Python workers of their own), and through a Spark Connect server (pyspark's
``SparkConnectServer``, a client without JVM). Each gives the same ``report.json`` and the same
``unique/`` and ``duplicates/`` rows. The streaming mode runs on the cluster too.

Output through a URI that is not a local path: Hadoop's ``viewfs://`` with a mount table onto a
temp folder (a scheme built into Hadoop) receives every output and nothing lands in the working
directory. There is no local stand-in for Databricks, Synapse or ABFS; their job definitions
are documented in spark/README.md.

The cluster and the server are started once for this file (each costs JVM start-ups) and the
data is a few dozen messages.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from replication.properties import REPL_HOPS, REPL_ORIGIN, REPL_PATH
from replication.showcase import SHORT_RUN_JVM
from spark.dedup_audit import main
from tests.spark.engines import (
    ROOT,
    SPARK_HOME,
    Engine,
    connect_server,
    run_audit_process,
    standalone_cluster,
)
from tests.spark.test_capture_input import CAPTURE_SCHEMA
from tests.spark.test_dedup_audit import REGIONS, write_inputs

# A standalone cluster runs each audit in a driver and two executors of their own (JVMs and
# Python workers), beside the Connect server's: minutes on a loaded 2-core machine, more than
# the suite's default limit of 300 s, which counts the module's cluster start-up as well.
pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]

fastavro = pytest.importorskip("fastavro")

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
NAMES = ("weu", "neu", "eus")


def capture_time(moment: datetime) -> str:
    """Capture's ``EnqueuedTimeUtc`` text, e.g. ``5/1/2024 12:00:07 PM``."""
    hour = moment.hour % 12 or 12
    return f"{moment.month}/{moment.day}/{moment.year} {hour}:{moment:%M:%S} {moment:%p}"


def mesh_events() -> dict[str, list[tuple[datetime, dict[str, Any]]]]:
    """30 messages of a 3-region all-active mesh as each region's Capture would hold them: each
    published in one region and replicated to the others 1-2 s later; m7 never reached eus,
    m11's replica in neu arrived twice, m13 came back to its origin (a loop)."""
    events: dict[str, list[tuple[datetime, dict[str, Any]]]] = {name: [] for name in NAMES}
    sequence = 0
    for number in range(30):
        origin = NAMES[number % 3]
        published = T0 + timedelta(seconds=10 * number)
        message_id = f"m{number}"
        copies: list[tuple[str, datetime, dict[str, Any]]] = [(origin, published, {})]
        for lag, target in enumerate(name for name in NAMES if name != origin):
            if message_id == "m7" and target == "eus":
                continue
            stamped = {REPL_ORIGIN: origin, REPL_PATH: f"{origin};{target}", REPL_HOPS: 1}
            copies.append((target, published + timedelta(seconds=1 + lag), stamped))
            if message_id == "m11" and target == "neu":
                copies.append((target, published + timedelta(seconds=5), stamped))
        if message_id == "m13":
            back = {REPL_ORIGIN: origin, REPL_PATH: f"{origin};neu;{origin}", REPL_HOPS: 2}
            copies.append((origin, published + timedelta(seconds=4), back))
        for region, moment, properties in copies:
            sequence += 1
            events[region].append(
                (
                    moment,
                    {
                        "SequenceNumber": sequence,
                        "Offset": str(4096 + sequence),
                        "EnqueuedTimeUtc": capture_time(moment),
                        "SystemProperties": {"message-id": message_id},
                        "Properties": properties,
                        "Body": b"{}",
                    },
                )
            )
    return events


def write_mesh_captures(root: Path) -> list[str]:
    """Each region's events in Capture's default layout, one file per 2-minute window
    (``{ns}/{hub}/0/yyyy/MM/dd/HH/mm/ss.avro``); the ``--input`` arguments."""
    arguments = []
    parsed = fastavro.parse_schema(CAPTURE_SCHEMA)
    for region, events in mesh_events().items():
        windows: dict[datetime, list[dict[str, Any]]] = {}
        for moment, event in events:
            start = moment.replace(minute=moment.minute - moment.minute % 2, second=0)
            windows.setdefault(start, []).append(event)
        for start, items in windows.items():
            file = root / region / f"ns-{region}/orders/0/{start:%Y/%m/%d/%H/%M/%S}.avro"
            file.parent.mkdir(parents=True, exist_ok=True)
            with file.open("wb") as handle:
                fastavro.writer(handle, parsed, items)
        arguments += ["--input", f"{region}={root / region}"]
    return arguments


@pytest.fixture(scope="module")
def captures(tmp_path_factory: Any) -> list[str]:
    return write_mesh_captures(tmp_path_factory.mktemp("captures"))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: Any) -> Iterator[Engine]:
    with standalone_cluster(tmp_path_factory.mktemp("standalone")) as engine:
        yield engine


@pytest.fixture(scope="module")
def connect(tmp_path_factory: Any) -> Iterator[Engine]:
    pytest.importorskip("grpc", reason="the Spark Connect client needs pyspark[connect]")
    with connect_server(tmp_path_factory.mktemp("connect")) as engine:
        yield engine


AUDIT = ["--format", "capture", "--watermark", "30 seconds"]


def submit(cluster: Engine, arguments: list[str], cwd: Path) -> None:
    """``spark-submit --master spark://...`` of the audit file, as a user submits it."""
    done = run_audit_process(
        [str(SPARK_HOME / "bin" / "spark-submit"), "--master", cluster.url,
         "--conf", "spark.executor.cores=1", "--conf", "spark.executor.memory=512m",
         "--conf", "spark.cores.max=2", "--conf", "spark.ui.enabled=false",
         "--conf", "spark.sql.shuffle.partitions=4",
         # The driver and the executors with the Spark tests' short-run JVM options too.
         "--conf", f"spark.driver.extraJavaOptions=-Duser.timezone=UTC {SHORT_RUN_JVM}",
         "--conf", f"spark.executor.extraJavaOptions=-Duser.timezone=UTC {SHORT_RUN_JVM}",
         str(ROOT / "spark" / "dedup_audit.py"), *arguments],
        cwd,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-5000:] + cluster.log_tail()


def rows(spark: Any, folder: Path) -> list[tuple[Any, ...]]:
    return sorted(tuple(row) for row in spark.read.parquet(str(folder)).collect())


def visible(folder: Path) -> list[str]:
    """The names in ``folder`` but hidden ones: Hadoop's local filesystem writes a ``.NAME.crc``
    checksum beside each file it writes (and moves it with the file)."""
    return sorted(p.name for p in folder.iterdir() if not p.name.startswith("."))


def canonical(folder: Path) -> str:
    return json.dumps(json.loads((folder / "report.json").read_text()), sort_keys=True)


def test_the_same_report_and_rows_on_local_standalone_and_connect(
    spark: Any, captures: list[str], cluster: Engine, connect: Engine, tmp_path: Path
) -> None:
    outputs = {name: tmp_path / name for name in ("local", "standalone", "connect")}
    assert main([*captures, *AUDIT, "--output", str(outputs["local"])]) == 0
    submit(cluster, [*captures, *AUDIT, "--output", str(outputs["standalone"])], tmp_path)
    through_connect = run_audit_process(
        [sys.executable, "-m", "spark.dedup_audit", *captures, *AUDIT,
         "--remote", connect.url, "--output", str(outputs["connect"])],
        tmp_path,
    )  # fmt: skip
    assert through_connect.returncode == 0, through_connect.stderr[-5000:] + connect.log_tail()

    report = json.loads((outputs["local"] / "report.json").read_text())
    assert (report["unique_messages"], report["total_records"]) == (30, 91)
    assert (report["expected_replicas"], report["unexpected_duplicates"]) == (59, 2)
    assert (report["missing_total"], report["loops"]) == (1, 1)
    for name in ("standalone", "connect"):
        assert canonical(outputs[name]) == canonical(outputs["local"]), name
        for folder in ("unique", "duplicates"):
            assert rows(spark, outputs[name] / folder) == rows(spark, outputs["local"] / folder)
        for listing in ("missing", "loops"):
            assert len(list((outputs[name] / listing).glob("part-*.csv"))) == 1
        assert (outputs[name] / "report.html").read_text().startswith("<!DOCTYPE html>")
    # Replicas are not listed: the in-region duplicates alone (no capture repeats here).
    assert report["capture_repeats"] == 0
    assert len(rows(spark, outputs["local"] / "duplicates")) == report["unexpected_duplicates"]
    # Only the outputs, nothing staged left behind, nothing in the working directory.
    for output in outputs.values():
        assert visible(output) == [
            "duplicates", "loops", "missing", "report.html", "report.json", "unique",
        ]  # fmt: skip
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(outputs)


def test_streaming_on_the_standalone_cluster_gives_the_local_report(
    spark: Any, cluster: Engine, tmp_path: Path
) -> None:
    inputs = write_inputs(tmp_path / "in", REGIONS)
    arguments = [*inputs, "--format", "json", "--watermark", "30 seconds", "--streaming"]
    assert main([*arguments, "--output", str(tmp_path / "local")]) == 0
    submit(cluster, [*arguments, "--output", str(tmp_path / "standalone")], tmp_path)
    assert canonical(tmp_path / "standalone") == canonical(tmp_path / "local")
    # The same messages; which of two copies that meet in one micro-batch the stream keeps is
    # not specified (spark/README.md, Streaming), so the rows' regions may differ.
    local, standalone = (
        sorted(r["message_id"] for r in spark.read.parquet(str(tmp_path / n / "unique")).collect())
        for n in ("local", "standalone")
    )
    assert standalone == local == ["m1", "m2", "m3", "m4", "m5", "m6"]
    report = json.loads((tmp_path / "local" / "report.json").read_text())
    assert report["streaming"]["micro_batches"] >= 1


def test_every_output_lands_under_a_viewfs_uri_and_none_in_the_working_directory(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inputs and output through Hadoop's ``viewfs://`` (a mount table in the session's Hadoop
    configuration, onto temp folders): on the unhealthy mesh, so that the missing and looping
    listings are written and read back too."""
    write_inputs(tmp_path / "in", REGIONS)
    (tmp_path / "target").mkdir()
    table = f"audit{abs(hash(str(tmp_path))) % 10**8}"
    for link, folder in (("/in", tmp_path / "in"), ("/out", tmp_path / "target")):
        spark.conf.set(f"fs.viewfs.mounttable.{table}.link.{link}", folder.as_uri())
    working = tmp_path / "cwd"
    working.mkdir()
    monkeypatch.chdir(working)
    inputs = [
        a for region in REGIONS for a in ("--input", f"{region}=viewfs://{table}/in/{region}")
    ]
    code = main([*inputs, "--format", "json", "--watermark", "30 seconds",
                 "--output", f"viewfs://{table}/out/audit"])  # fmt: skip
    assert code == 0
    assert list(working.iterdir()) == []
    out = tmp_path / "target" / "audit"
    assert visible(out) == [
        "duplicates", "loops", "missing", "report.html", "report.json", "unique",
    ]  # fmt: skip
    report = json.loads((out / "report.json").read_text())
    assert (report["missing_total"], report["loops"], report["unique_messages"]) == (1, 1, 6)
    page = (out / "report.html").read_text()
    missing_file = next((out / "missing").glob("part-*.csv")).name
    assert f'href="missing/{missing_file}"' in page
    assert "m4" in page

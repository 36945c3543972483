"""The Spark duplicate audit over what the regions held (``replication audit``).

The regions' captures are the audit's input, written as a deployment writes them: the demo runs its
topology as if every Service Bus namespace had a ``capture`` section (:data:`DEMO_CAPTURE`,
:func:`~replication.topology.capture_everywhere`), so the local host runs a capture task per topic
beside the replication tasks, and ``REPLICATION_CAPTURE_STORAGE`` points them at the folder
``OUTPUT/capture`` (:func:`capture_settings`). Each region's files land under
``OUTPUT/capture/<container>/<region>/yyyy/MM/dd/HH/`` (:func:`capture_folders`), the audit's
``--format json`` input. The audit then runs as its own process, ``python -m replication.audit``
(the library never imports the audit), with one ``--expect SRC:DST`` per pair of regions a task
connects, and writes ``OUTPUT/audit/report.json`` and ``report.html``. :class:`SparkAudit` runs it
in the background, so the showcase's other scenarios go on meanwhile; its output goes to
``OUTPUT/audit/spark.log`` unless it is shown. Its JVM runs with :data:`SHORT_RUN_JVM`, unless
``PYSPARK_SUBMIT_ARGS`` says otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from replication.capture import capture_record
from replication.exceptions import ReplicationError
from replication.layout import AUDIT, child_environment
from replication.settings import CAPTURE_STORAGE_SETTING
from replication.topology import CaptureSpec, Topology, capture_sources

WATERMARK = "30 seconds"
SHORT_RUN_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
"""JVM options for the demo's audit, a few small Spark jobs over a few hundred records: the
quick (C1) JIT only and the serial collector. They change how fast it runs, not what it
computes (the same options as the Spark tests'): the showcase's audit took 18.6 s instead of
22.9 s (median of 3, side by side). An audit of real captures keeps Spark's defaults."""


DEMO_CAPTURE = CaptureSpec.model_validate({"storageAccount": "demo", "container": "captures"})
"""The capture section the demo gives each Service Bus namespace that has none. The account is
never reached: :func:`capture_settings` sends the captures to a local folder."""


def capture_root(output: Path) -> Path:
    """``OUTPUT/capture``: the folder store every capture of a demo run writes to."""
    return output / "capture"


def capture_settings(output: Path) -> dict[str, str]:
    """The app setting that sends the captures to :func:`capture_root` (a folder store)."""
    return {CAPTURE_STORAGE_SETTING: str(capture_root(output).resolve())}


def clear_captures(output: Path) -> None:
    """Empty ``OUTPUT/capture`` before a run: its audit must read this run's captures only (a
    demo run again into the same folder publishes the same MessageIds, which the audit would
    count twice)."""
    shutil.rmtree(capture_root(output), ignore_errors=True)


def capture_folders(topology: Topology, output: Path) -> dict[str, Path]:
    """Each captured region's folder under ``OUTPUT/capture`` (its topics' files together)."""
    root = capture_root(output)
    return {c.region: root / c.spec.container / c.region for c in capture_sources(topology)}


def audit_command(topology: Topology, folders: Mapping[str, Path], output: Path) -> list[str]:
    """``python -m replication.audit`` (the checkout's ``spark``: :data:`AUDIT`) over the
    regions' capture ``folders``."""
    expectations = sorted(
        {
            f"{task.source.namespace}:{target.namespace}"
            for task in topology.tasks
            for target in task.targets
            if target.namespace in folders and task.source.namespace in folders
        }
    )
    command = [sys.executable, "-m", AUDIT.module(), "--format", "json"]
    for region, folder in folders.items():
        command += ["--input", f"{region}={folder}"]
    for pair in expectations:
        command += ["--expect", pair]
    return [*command, "--watermark", WATERMARK, "--output", str(output / "audit")]


def read_report(output: Path) -> dict[str, Any]:
    report: dict[str, Any] = json.loads((output / "audit" / "report.json").read_text())
    return report


def healthy(report: Mapping[str, Any]) -> bool:
    """No message missing in a region it was expected in, and no loop."""
    return bool(report["missing_total"] == 0 and report["loops"] == 0)


class SparkAudit:
    """The audit as a background process; its output in ``OUTPUT/audit/spark.log`` unless
    ``show_output`` (then it is the caller's)."""

    def __init__(self, command: list[str], output: Path, *, show_output: bool = False) -> None:
        self.output = output
        self.log = output / "audit" / "spark.log"
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self._stream: IO[bytes] | None = None if show_output else self.log.open("wb")
        environ = dict(os.environ)
        # PySpark reads its launch options (spark-submit's) from here; a user's own win.
        environ.setdefault(
            "PYSPARK_SUBMIT_ARGS", f'--driver-java-options "{SHORT_RUN_JVM}" pyspark-shell'
        )
        self._process = subprocess.Popen(
            command,
            env={**environ, **child_environment()},
            stdout=self._stream,
            stderr=subprocess.STDOUT if self._stream else None,
        )

    def done(self) -> bool:
        return self._process.poll() is not None

    def wait(self) -> dict[str, Any]:
        """The report, once the audit has ended (ReplicationError when it failed)."""
        code = self._process.wait()
        if self._stream is not None:
            self._stream.close()
        if code != 0:
            raise ReplicationError(f"the Spark audit failed (exit code {code}); see {self.log}")
        return read_report(self.output)

    def stop(self) -> None:
        if self._process.poll() is None:
            self._process.terminate()
            self._process.wait()
        if self._stream is not None:
            self._stream.close()


def verdict_lines(report: Mapping[str, Any]) -> list[str]:
    """The audit's figures, one line per region and region pair."""
    lines = [
        f"  {region:<6} {figures['records']:>6} copies, "
        f"{figures['expected_replicas']} expected replicas, "
        f"{figures['unexpected_duplicates']} unexpected duplicates, {figures['missing']} missing"
        for region, figures in report["regions"].items()
    ]
    lines += [
        f"  lag {pair:<12} p50 {lag['p50']:.3f} s   p95 {lag['p95']:.3f} s"
        for pair, lag in sorted(report["lag_seconds"].items())
    ]
    return [*lines, f"  loops {report['loops']}, missing {report['missing_total']}"]


def summary_lines(report: Mapping[str, Any]) -> list[str]:
    """The audit's figures in two lines (the showcase prints them under its table)."""
    regions = report["regions"]
    lags = [lag["p50"] for lag in report["lag_seconds"].values()]
    lag = f"{min(lags):.2f} to {max(lags):.2f} s" if lags else "-"
    # Replicas are copies, not duplicates: the words of the report page (spark/_html.py).
    return [
        f"  {report['total_records']} copies read of {report['unique_messages']} messages in "
        f"{len(regions)} regions ({', '.join(regions)}): {report['expected_replicas']} expected "
        f"replicas, {report['unexpected_duplicates']} unexpected duplicates, "
        f"{report['missing_total']} missing, {report['loops']} loops",
        f"  lag p50 per region pair {lag}",
    ]


__all__ = [
    "DEMO_CAPTURE",
    "SparkAudit",
    "audit_command",
    "capture_folders",
    "capture_record",
    "capture_root",
    "capture_settings",
    "clear_captures",
    "healthy",
    "read_report",
    "summary_lines",
    "verdict_lines",
]

"""Duplicate audit of replicated messages across regions.

    dedup_audit --input REGION=PATH [--input REGION=PATH ...] --format json|parquet|capture
                --watermark "30 seconds" --output DIR [--expect SRC:DST ...]
                [--streaming [--topology topology.json]]

Runs unchanged as ``spark-submit spark/dedup_audit.py ...`` (ship the ``replication`` package
with ``--py-files``, see spark/README.md) and as ``python -m spark.dedup_audit ...`` (local
``local[*]`` session). REGION labels must be the namespaces' logical names from the topology:
they are compared with ``repl-origin`` / ``repl-path``.

Writes ``DIR/unique/`` (parquet, one row per message id: its first copy), ``DIR/duplicates/``
(parquet, every other copy), ``DIR/report.json`` and ``DIR/report.html``.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import shutil
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    # Run as a file (spark-submit spark/dedup_audit.py): make the repository root importable.
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    __package__ = "spark"

from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from replication.exceptions import ConfigurationError
from replication.exit_codes import ExitCode
from spark import _audit as audit
from spark._html import render
from spark._inputs import InputError, read_inputs
from spark._schema import MESSAGE_ID
from spark._streaming import deduplicate_stream, stream_watermark

logger = logging.getLogger("spark.dedup_audit")

DEFAULT_WATERMARK = "30 seconds"
"""How far apart in their own enqueue times copies may be before they count as late (and a
replica before its origin as clock skew), unless ``--watermark`` says otherwise."""

_UNITS = {"millisecond": 0.001, "second": 1, "minute": 60, "hour": 3600, "day": 86400}


def watermark_seconds(text: str) -> float:
    """``"30 seconds"`` -> 30.0 (the units Spark's ``withWatermark`` accepts)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-z]+?)s?\s*", text.lower())
    if match is None or match.group(2) not in _UNITS:
        raise argparse.ArgumentTypeError(f"watermark {text!r}: expected e.g. '30 seconds'")
    return float(match.group(1)) * _UNITS[match.group(2)]


@dataclass
class AuditResult:
    """The report and the data of the charts (``unique/`` and ``duplicates/`` are written)."""

    report: dict[str, Any]
    charts: dict[str, Any]


HASH_JOIN_MESSAGES_PER_PARTITION = 1_000_000
"""Above this many messages per shuffle partition, duplicates are found by a sort-merge join,
which can spill, instead of a hash table per partition, which must fit in memory."""


def run_audit(
    records: DataFrame,
    regions: list[str],
    watermark: float,
    expect: list[tuple[str, str]],
    output: Path,
    *,
    write_unique: bool = True,
) -> AuditResult:
    """Every report figure from the normalized records of all regions; writes ``unique/`` (unless
    not ``write_unique``: the streaming mode writes its own) and ``duplicates/`` under ``output``.

    Two passes over the input: the first reduces every message's copies to one summary row
    (cached), from which every figure and ``unique/`` come; the second matches each copy with
    its message's summary to list the duplicates. Both shuffle by message id into the same
    partitions, so the matching needs no further exchange.
    """
    started = time.perf_counter()
    index = audit.RegionIndex.of(regions)
    partitions = int(records.sparkSession.conf.get("spark.sql.shuffle.partitions") or 200)
    observed = Observation("input")
    counted = records.observe(observed, F.count(F.when(~audit.is_valid(), 1)).alias("invalid"))
    summary = audit.message_summary(
        audit.copy_keys(counted, index).repartition(partitions, MESSAGE_ID), index
    )
    # Compressing the cached summary's columns took longer than everything read from it saves.
    with session_conf(records.sparkSession, {_CACHE_COMPRESSED: "false"}):
        summary.persist()
    # The lag distribution feeds both the lag figures and the histograms: computed once.
    lag_rows = audit.lags(summary, index).persist()
    try:
        figures = audit.summary_figures(summary, index, expect)
        invalid = int(observed.get["invalid"])
        total, unique = int(figures["total"]), int(figures["unique"])
        logger.info("read %d records (%d invalid, without message id or time)", total, invalid)
        logger.info("%d unique messages, %d duplicate copies", unique, total - unique)
        regions_report = audit.region_report(figures, index, expect)
        logger.info("missing per region: %s", {r: f["missing"] for r, f in regions_report.items()})
        lags = audit.lag_figures(lag_rows, index, watermark)
        charts = {
            "timeline": audit.timeline(summary, index, figures),
            "lag_histograms": audit.lag_histograms(lag_rows, index, lags.ranges),
        }
        logger.info(
            "lags of %d region pairs, %d clock skew suspects",
            len(lags.summary),
            lags.clock_skew_suspects,
        )
        if write_unique:
            write_parquet(audit.unique_rows(summary, index), output / "unique")
            logger.info("wrote unique/")
        duplicates = audit.duplicate_copies(
            audit.copy_keys(records, index, replication=False).repartition(partitions, MESSAGE_ID),
            summary,
            index,
            watermark,
            hash_join=unique <= HASH_JOIN_MESSAGES_PER_PARTITION * partitions,
        )
        late_observed = Observation("late")
        write_parquet(
            duplicates.observe(late_observed, F.count(F.when(F.col("late"), 1)).alias("late")),
            output / "duplicates",
        )
        late = int(late_observed.get["late"])
        logger.info("wrote duplicates/ (%d late copies)", late)
    finally:
        lag_rows.unpersist()
        summary.unpersist()
    report = {
        "total_records": total,
        "unique_messages": unique,
        "duplicate_records": total - unique,
        "regions": {region: regions_report[region] for region in regions},
        "missing_total": sum(region["missing"] for region in regions_report.values()),
        "loops": int(figures["loops"]),
        "lag_seconds": lags.summary,
        "clock_skew_suspects": lags.clock_skew_suspects,
        "late_records": late,
        "invalid_records": invalid,
    }
    logger.info("audit computed in %.1f s", time.perf_counter() - started)
    return AuditResult(report, charts)


_TIMESTAMP_TYPE = "spark.sql.parquet.outputTimestampType"
_CACHE_COMPRESSED = "spark.sql.inMemoryColumnarStorage.compressed"


@contextmanager
def session_conf(spark: SparkSession, settings: dict[str, str]) -> Iterator[None]:
    """Apply SQL ``settings`` while the block runs, then restore what the session had."""
    previous: dict[str, str | None] = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, earlier in previous.items():
            if earlier is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, earlier)


def write_parquet(frame: DataFrame, path: Path) -> None:
    """Write ``frame`` to ``path`` (replacing it), the way the audit's outputs are written.

    Times are stored as ``TIMESTAMP_MICROS``, the standard Parquet type, instead of Spark's
    default legacy ``INT96`` (slower to write). Message ids get no dictionary: they are nearly
    all distinct, so building one per page is work that Parquet then discards.
    """
    with session_conf(frame.sparkSession, {_TIMESTAMP_TYPE: "TIMESTAMP_MICROS"}):
        frame.write.mode("overwrite").option(
            f"parquet.enable.dictionary#{MESSAGE_ID}", "false"
        ).parquet(str(path))


def _size_shuffles_for_local_runs(spark: SparkSession) -> None:
    """On ``local[*]``, unless configured, shuffle into 2 partitions per core instead of 200.

    Spark's default of 200 suits clusters; on one machine each of those tasks costs more than
    the rows it sorts, and an audit of a few thousand records spent most of its minute on them.
    """
    context = spark.sparkContext
    if (context.master or "").startswith("local") and not context.getConf().contains(
        "spark.sql.shuffle.partitions"
    ):
        spark.conf.set("spark.sql.shuffle.partitions", str(2 * context.defaultParallelism))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="dedup_audit", description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", action="append", required=True, metavar="REGION=PATH")
    parser.add_argument("--format", choices=["json", "parquet", "capture"], default="json")
    parser.add_argument(
        "--watermark",
        help="how far apart copies may be: 30 seconds unless given; --streaming: see --topology",
    )
    parser.add_argument("--output", required=True, metavar="DIR")
    parser.add_argument("--expect", action="append", default=[], metavar="SRC:DST")
    parser.add_argument("--streaming", action="store_true")
    parser.add_argument(
        "--topology",
        metavar="FILE",
        help="--streaming without --watermark: watermark the stream on the longest "
        "retry.outageTolerance of this topology (default: the default tolerance, 1 hour)",
    )
    parser.add_argument("--master", help="Spark master when none is configured (local[*])")
    args = parser.parse_args(argv)
    if args.topology and not args.streaming:
        parser.error("--topology sets the watermark of --streaming; add --streaming")
    inputs: dict[str, str] = {}
    for item in args.input:
        region, sep, path = item.partition("=")
        if not sep or not region or not path:
            parser.error(f"--input {item!r}: expected REGION=PATH")
        if region in inputs:
            parser.error(f"--input: region {region!r} given twice")
        inputs[region] = path
    if len(inputs) > audit.MAX_REGIONS:
        parser.error(f"--input: {len(inputs)} regions, at most {audit.MAX_REGIONS} are supported")
    expect: list[tuple[str, str]] = []
    for item in args.expect:
        source, sep, target = item.partition(":")
        if not sep or source not in inputs or target not in inputs:
            parser.error(f"--expect {item!r}: expected SRC:DST with regions from --input")
        expect.append((source, target))
    try:
        args.watermark_seconds = watermark_seconds(args.watermark or DEFAULT_WATERMARK)
    except argparse.ArgumentTypeError as error:
        parser.error(str(error))
    args.inputs, args.expect_pairs = inputs, expect
    return args


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    args = parse_args(argv)
    if args.streaming:
        try:
            explicit = args.watermark_seconds if args.watermark else None
            args.stream_watermark = stream_watermark(explicit, args.topology)
        except ConfigurationError as error:
            logger.error("%s", error)
            return ExitCode.CONFIGURATION
        logger.info(
            "streaming: watermark %s on the origin's enqueue time (%s)",
            args.stream_watermark.delay,
            args.stream_watermark.source,
        )
    builder = SparkSession.builder.appName("replication-dedup-audit")
    if args.master:
        builder = builder.master(args.master)
    if not sys.stderr.isatty():  # progress bars only where someone watches them
        builder = builder.config("spark.ui.showConsoleProgress", "false")
    spark = builder.getOrCreate()
    _size_shuffles_for_local_runs(spark)
    # Capture times carry no zone and are UTC; JSON times carry their own offset.
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    output = Path(args.output)
    try:
        records = read_inputs(spark, args.inputs, args.format)
        output.mkdir(parents=True, exist_ok=True)
        result = run_audit(
            records,
            list(args.inputs),
            args.watermark_seconds,
            args.expect_pairs,
            output,
            write_unique=not args.streaming,
        )
    except InputError as error:
        logger.error("%s", error)
        return ExitCode.CONFIGURATION
    if args.streaming:
        stream_output = str(output / "stream_unique")
        checkpoint = output / "stream_checkpoint"
        # Each audit streams its inputs from the start: a checkpoint left by an earlier run
        # would resume after the files that run read, and report on its output instead.
        for stale in (Path(stream_output), checkpoint):
            shutil.rmtree(stale, ignore_errors=True)
        stats = deduplicate_stream(
            spark, args.inputs, args.format, args.stream_watermark.spark_interval,
            stream_output, str(checkpoint),
        )  # fmt: skip
        streamed = spark.read.parquet(stream_output)
        extra = streamed.count() - streamed.select(MESSAGE_ID).distinct().count()
        result.report["late_records"] = extra + stats.dropped_by_watermark
        result.report["streaming"] = {
            "watermark_seconds": args.stream_watermark.delay.total_seconds(),
            "micro_batches": stats.batches,
            "max_state_rows": stats.max_state_rows,
            "dropped_by_watermark": stats.dropped_by_watermark,
        }
        write_parquet(audit.unique_messages(streamed), output / "unique")
    (output / "report.json").write_text(json.dumps(result.report, indent=2) + "\n")
    (output / "report.html").write_text(render(result.report, result.charts))
    logger.info("wrote %s", output)
    print(json.dumps(result.report, indent=2))
    return ExitCode.OK


if __name__ == "__main__":
    sys.exit(main())

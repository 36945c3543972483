"""Duplicate audit of replicated messages across regions.

    dedup_audit --input REGION=PATH [--input REGION=PATH ...] --format json|parquet|capture
                --watermark "30 seconds" --output DIR [--expect SRC:DST ...] [--streaming]

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
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    # Run as a file (spark-submit spark/dedup_audit.py): make the repository root importable.
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    __package__ = "spark"

from pyspark.sql import DataFrame, SparkSession

from spark import _audit as audit
from spark._html import render
from spark._inputs import InputError, read_inputs
from spark._schema import MESSAGE_ID
from spark._streaming import deduplicate_stream

logger = logging.getLogger("spark.dedup_audit")

_UNITS = {"millisecond": 0.001, "second": 1, "minute": 60, "hour": 3600, "day": 86400}


def watermark_seconds(text: str) -> float:
    """``"30 seconds"`` -> 30.0 (the units Spark's ``withWatermark`` accepts)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-z]+?)s?\s*", text.lower())
    if match is None or match.group(2) not in _UNITS:
        raise argparse.ArgumentTypeError(f"watermark {text!r}: expected e.g. '30 seconds'")
    return float(match.group(1)) * _UNITS[match.group(2)]


@dataclass
class AuditResult:
    """The report, the frames to write, and the data of the charts."""

    report: dict[str, Any]
    unique: DataFrame
    duplicates: DataFrame
    charts: dict[str, Any]


def run_audit(
    records: DataFrame,
    regions: list[str],
    watermark: float,
    expect: list[tuple[str, str]],
) -> AuditResult:
    """Every report figure from the normalized records of all regions."""
    started = time.perf_counter()
    # One shuffle for the whole audit: every later stage groups, windows or joins by message
    # id, and on frames hash-partitioned by it Spark plans them without another exchange.
    partitioned = records.repartition(MESSAGE_ID).persist()
    valid, invalid = audit.split_invalid(partitioned)
    total = valid.count()
    invalid_count = invalid.count()
    logger.info("read %d records (%d invalid, without message id or time)", total, invalid_count)
    per_region = audit.first_copy_per_region(valid).persist()
    origins = audit.origins(per_region).persist()
    unique = audit.unique_messages(valid).persist()
    unique_count = unique.count()
    logger.info("%d unique messages", unique_count)
    duplicates = audit.duplicate_copies(valid, watermark).persist()
    late = duplicates.where("late").count()
    logger.info("%d duplicate copies, %d late", total - unique_count, late)
    lag_rows = audit.lags(per_region, origins).persist()
    counts = audit.region_counts(per_region)
    held = {region: figures["unique_messages"] for region, figures in counts.items()}
    missing = audit.missing_per_region(
        per_region, origins, regions, expect, unique_count=unique_count, held=held
    )
    region_report = {
        region: {
            **counts.get(region, {"records": 0, "unique_messages": 0, "in_region_duplicates": 0}),
            "missing": missing[region],
        }
        for region in regions
    }
    logger.info("missing per region: %s", missing)
    report = {
        "total_records": total,
        "unique_messages": unique_count,
        "duplicate_records": total - unique_count,
        "regions": region_report,
        "missing_total": sum(missing.values()),
        "loops": audit.loop_messages(valid, len(regions)).count(),
        "lag_seconds": audit.lag_summary(lag_rows),
        "clock_skew_suspects": lag_rows.where(lag_rows.lag_seconds < -watermark).count(),
        "late_records": late,
        "invalid_records": invalid_count,
    }
    charts = {"timeline": audit.timeline(valid), "lag_histograms": audit.lag_histograms(lag_rows)}
    logger.info("audit computed in %.1f s", time.perf_counter() - started)
    return AuditResult(report, unique, duplicates, charts)


def _size_shuffles_for_local_runs(spark: SparkSession) -> None:
    """On ``local[*]``, unless configured, shuffle into 2 partitions per core instead of 200.

    Spark's default of 200 suits clusters; on one machine each of those tasks costs more than
    the rows it sorts, and an audit of a few thousand records spent most of its minute on them.
    """
    context = spark.sparkContext
    if context.master.startswith("local") and not context.getConf().contains(
        "spark.sql.shuffle.partitions"
    ):
        spark.conf.set("spark.sql.shuffle.partitions", str(2 * context.defaultParallelism))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="dedup_audit", description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", action="append", required=True, metavar="REGION=PATH")
    parser.add_argument("--format", choices=["json", "parquet", "capture"], default="json")
    parser.add_argument("--watermark", default="30 seconds")
    parser.add_argument("--output", required=True, metavar="DIR")
    parser.add_argument("--expect", action="append", default=[], metavar="SRC:DST")
    parser.add_argument("--streaming", action="store_true")
    parser.add_argument("--master", help="Spark master when none is configured (local[*])")
    args = parser.parse_args(argv)
    inputs: dict[str, str] = {}
    for item in args.input:
        region, sep, path = item.partition("=")
        if not sep or not region or not path:
            parser.error(f"--input {item!r}: expected REGION=PATH")
        if region in inputs:
            parser.error(f"--input: region {region!r} given twice")
        inputs[region] = path
    expect: list[tuple[str, str]] = []
    for item in args.expect:
        source, sep, target = item.partition(":")
        if not sep or source not in inputs or target not in inputs:
            parser.error(f"--expect {item!r}: expected SRC:DST with regions from --input")
        expect.append((source, target))
    try:
        args.watermark_seconds = watermark_seconds(args.watermark)
    except argparse.ArgumentTypeError as error:
        parser.error(str(error))
    args.inputs, args.expect_pairs = inputs, expect
    return args


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    args = parse_args(argv)
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
        result = run_audit(records, list(args.inputs), args.watermark_seconds, args.expect_pairs)
    except InputError as error:
        logger.error("%s", error)
        return 2
    unique = result.unique
    if args.streaming:
        stream_output = str(output / "stream_unique")
        stats = deduplicate_stream(
            spark, args.inputs, args.format, args.watermark, stream_output,
            str(output / "stream_checkpoint"),
        )  # fmt: skip
        streamed = spark.read.parquet(stream_output)
        extra = streamed.count() - streamed.select(MESSAGE_ID).distinct().count()
        result.report["late_records"] = extra + stats.dropped_by_watermark
        result.report["streaming"] = {
            "micro_batches": stats.batches,
            "max_state_rows": stats.max_state_rows,
            "dropped_by_watermark": stats.dropped_by_watermark,
        }
        unique = audit.unique_messages(streamed)
    output.mkdir(parents=True, exist_ok=True)
    unique.write.mode("overwrite").parquet(str(output / "unique"))
    result.duplicates.write.mode("overwrite").parquet(str(output / "duplicates"))
    (output / "report.json").write_text(json.dumps(result.report, indent=2) + "\n")
    (output / "report.html").write_text(render(result.report, result.charts))
    logger.info("wrote %s", output)
    print(json.dumps(result.report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

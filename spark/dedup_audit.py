"""Duplicate audit of replicated messages across regions.

    replication audit --input REGION=PATH [--input REGION=PATH ...] --format json|parquet|capture
                --watermark "30 seconds" --output DIR [--expect SRC:DST ...]
                [--streaming [--topology topology.json]]

Runs as ``replication audit ...`` and ``python -m replication.audit ...`` (a local ``local[*]``
session unless ``--master`` says otherwise), and unchanged as a file, ``spark-submit
.../dedup_audit.py ...``, where ``replication`` is importable (installed, or shipped with
``--py-files``; see spark/README.md). In a checkout the package is the top-level ``spark``.
REGION labels must be the namespaces' logical names from the topology: they are compared with
``repl-origin`` / ``repl-path``.

Writes ``DIR/unique/`` (parquet, one row per message id: its first copy), ``DIR/duplicates/``
(parquet, every other copy), ``DIR/report.json`` and ``DIR/report.html``.
"""

from __future__ import annotations

import argparse
import csv
import itertools
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
    # Run as a file (spark-submit .../dedup_audit.py): import it as the package it is part of,
    # ``replication.audit`` where the wheel installed it, ``spark`` in a checkout.
    _HERE = Path(__file__).resolve().parent
    _INSTALLED = _HERE.name == "audit" and _HERE.parent.name == "replication"
    sys.path.insert(0, str(_HERE.parents[1] if _INSTALLED else _HERE.parent))
    __package__ = "replication.audit" if _INSTALLED else "spark"

from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from replication.exceptions import ConfigurationError
from replication.exit_codes import ExitCode

from . import _audit as audit
from ._html import LISTED_IDS, Charts, Listing, render
from ._inputs import InputError, read_inputs
from ._schema import ENQUEUED, MESSAGE_ID, REGION
from ._streaming import deduplicate_stream, stream_watermark

logger = logging.getLogger("replication.audit")

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
    charts: Charts


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
    not ``write_unique``: the streaming mode writes its own), ``duplicates/`` and, when there
    are any, ``missing/`` and ``loops/`` under ``output``.

    The input is shuffled once, by message id, into one summary row per message (cached). Four
    Spark actions read that summary: writing ``unique/`` (observing every total on the way), the
    lag percentiles and the charts, writing ``duplicates/`` and writing the missing and looping
    ids. Only the messages with an in-region duplicate need their copies again: a second read of
    the input keeps their copies alone.
    """
    started = time.perf_counter()
    index = audit.RegionIndex.of(regions)
    spark = records.sparkSession
    partitions = int(spark.conf.get("spark.sql.shuffle.partitions") or 200)
    observed_input = Observation("input")
    summary = audit.message_summary(
        audit.copy_keys(records, index, observed_input).repartition(partitions, MESSAGE_ID), index
    )
    summary = hold(summary)
    try:
        observed = Observation("figures")
        figured = summary.observe(observed, *audit.figure_columns(index, expect))
        if write_unique:
            write_parquet(audit.unique_rows(figured, index), output / "unique")
            logger.info("wrote unique/")
        else:
            figured.write.format("noop").mode("overwrite").save()
        figures = audit.Figures(observed.get, index)
        invalid = int(observed_input.get["invalid"])
        total, unique = figures.total, figures["unique"]
        logger.info("read %d records (%d invalid, without message id or time)", total, invalid)
        logger.info("%d unique messages, %d duplicate copies", unique, total - unique)
        regions_report = figures.region_report()
        logger.info("missing per region: %s", {r: f["missing"] for r, f in regions_report.items()})
        time_range = figures.time_range
        axis = audit.TimeAxis.spanning(*time_range) if time_range else None
        # The distributions have a few thousand rows: one shuffle partition, not one per core.
        with session_conf(spark, {"spark.sql.shuffle.partitions": "1"}):
            distributions = audit.distributions(summary, index, axis, watermark)
        logger.info("lags of %d region pairs", len(distributions.lag_summary))
        duplicates = audit.duplicate_copies(
            summary,
            index,
            watermark,
            audit.unlisted_copies(records, summary, index, figures["unlisted"])
            if figures["unlisted"]
            else None,
        )
        late_observed = Observation("late")
        write_parquet(
            duplicates.observe(late_observed, F.count(F.when(F.col("late"), 1)).alias("late")),
            output / "duplicates",
        )
        late = int(late_observed.get["late"])
        logger.info("wrote duplicates/ (%d late copies)", late)
        missing_total = sum(region["missing"] for region in regions_report.values())
        listings = {
            "missing": write_listing(
                audit.missing_rows(summary, index, expect), missing_total, output / "missing"
            ),
            "loops": write_listing(
                audit.looping_rows(summary, index), figures["loops"], output / "loops"
            ),
        }
    finally:
        release(summary)
    report = {
        "total_records": total,
        "unique_messages": unique,
        "duplicate_records": total - unique,
        "regions": {region: regions_report[region] for region in regions},
        "missing_total": missing_total,
        "loops": figures["loops"],
        "lag_seconds": distributions.lag_summary,
        "clock_skew_suspects": distributions.clock_skew_suspects,
        "late_records": late,
        "invalid_records": invalid,
    }
    charts = Charts(distributions, axis, listings)
    logger.info("audit computed in %.1f s", time.perf_counter() - started)
    return AuditResult(report, charts)


def write_listing(rows: DataFrame, count: int, folder: Path) -> Listing:
    """Write ``rows`` to ``folder`` as one CSV file, earliest first, when ``count`` > 0;
    otherwise remove what an earlier audit left there."""
    if count == 0:
        shutil.rmtree(folder, ignore_errors=True)
        return Listing(None, [])
    ordered = rows.repartition(1).sortWithinPartitions(ENQUEUED, MESSAGE_ID)
    ordered.write.mode("overwrite").option("header", "true").csv(str(folder))
    file = next(folder.glob("part-*.csv"))
    with file.open(newline="") as handle:
        first = list(itertools.islice(csv.DictReader(handle), LISTED_IDS))
    logger.info("wrote %s (%d rows)", folder.name, count)
    return Listing(file, first)


_TIMESTAMP_TYPE = "spark.sql.parquet.outputTimestampType"
_CACHE_COMPRESSED = "spark.sql.inMemoryColumnarStorage.compressed"


def hold(frame: DataFrame) -> DataFrame:
    """Compute ``frame`` now and keep it (memory, spilling to disk) for the reads that follow.

    On a local master the rows are kept as they are (``localCheckpoint``): Spark's columnar
    cache converts every row into compressed column batches with statistics, which took
    longer than the aggregation that made the rows (measured at 1M messages: 3.4 s of CPU
    against 0.4 s). The checkpoint is eager: a lazy one, filled by writing ``unique/``, saved a
    job at 1M messages but ran the 10M audit 7-25 % slower (interleaved with this one, same
    files and process). A local checkpoint is not recomputed when an executor is lost, which
    on a local master is the driver itself; on a cluster the columnar cache is used
    (uncompressed: compressing it cost more time than it saved), which Spark recomputes after
    a loss.
    """
    if (frame.sparkSession.sparkContext.master or "").startswith("local"):
        return frame.localCheckpoint(eager=True)
    with session_conf(frame.sparkSession, {_CACHE_COMPRESSED: "false"}):
        frame.persist()
    return frame


def release(frame: DataFrame) -> None:
    """Free what ``hold`` kept."""
    if frame.is_cached:
        frame.unpersist()
        return
    # A local checkpoint's rows are the blocks of the RDD under its plan; without this they
    # stay until the driver's garbage collector lets Spark's cleaner find them.
    plan = frame._jdf.queryExecution().analyzed()
    if plan.nodeName() == "LogicalRDD":
        plan.rdd().unpersist(False)


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


DICTIONARY_COLUMNS = (REGION, "origin", "first_region", "copies")
"""The outputs' columns with few distinct values: the only ones Parquet dictionary-encodes."""


def write_parquet(frame: DataFrame, path: Path) -> None:
    """Write ``frame`` to ``path`` (replacing it), the way the audit's outputs are written.

    Times are stored as ``TIMESTAMP_MICROS``, the standard Parquet type, instead of Spark's
    default legacy ``INT96`` (slower to write). Only ``DICTIONARY_COLUMNS`` get a dictionary:
    ids, times and sequence numbers are nearly all distinct, so building a dictionary for them
    per page is work that Parquet then discards.
    """
    writer = frame.write.mode("overwrite").option("parquet.enable.dictionary", "false")
    for column in DICTIONARY_COLUMNS:
        if column in frame.columns:
            writer = writer.option(f"parquet.enable.dictionary#{column}", "true")
    with session_conf(frame.sparkSession, {_TIMESTAMP_TYPE: "TIMESTAMP_MICROS"}):
        writer.parquet(str(path))


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


DESCRIPTION = __doc__.split("\n\n")[0]


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the audit's arguments to ``parser`` (``replication audit`` and this module's own)."""
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


def prepare(args: argparse.Namespace) -> None:
    """Check the arguments together and derive ``inputs``, ``expect_pairs`` and
    ``watermark_seconds`` from them.

    Raises:
        argparse.ArgumentTypeError: what is wrong, in one line.
    """
    if args.topology and not args.streaming:
        raise argparse.ArgumentTypeError(
            "--topology sets the watermark of --streaming; add --streaming"
        )
    inputs: dict[str, str] = {}
    for item in args.input:
        region, sep, path = item.partition("=")
        if not sep or not region or not path:
            raise argparse.ArgumentTypeError(f"--input {item!r}: expected REGION=PATH")
        if region in inputs:
            raise argparse.ArgumentTypeError(f"--input: region {region!r} given twice")
        inputs[region] = path
    if len(inputs) > audit.MAX_REGIONS:
        raise argparse.ArgumentTypeError(
            f"--input: {len(inputs)} regions, at most {audit.MAX_REGIONS} are supported"
        )
    expect: list[tuple[str, str]] = []
    for item in args.expect:
        source, sep, target = item.partition(":")
        if not sep or source not in inputs or target not in inputs:
            raise argparse.ArgumentTypeError(
                f"--expect {item!r}: expected SRC:DST with regions from --input"
            )
        expect.append((source, target))
    args.watermark_seconds = watermark_seconds(args.watermark or DEFAULT_WATERMARK)
    args.inputs, args.expect_pairs = inputs, expect


def parse_args(argv: list[str] | None, *, prog: str = "replication audit") -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=prog, description=DESCRIPTION)
    configure(parser)
    args = parser.parse_args(argv)
    try:
        prepare(args)
    except argparse.ArgumentTypeError as error:
        parser.error(str(error))
    return args


def main(argv: list[str] | None = None, *, prog: str = "replication audit") -> int:
    """The audit as its own program: parse ``argv``, log at INFO, :func:`run`."""
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    return run(parse_args(argv, prog=prog))


def run(args: argparse.Namespace) -> int:
    """Audit what ``args`` (:func:`configure`, :func:`prepare`) names; the exit code."""
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

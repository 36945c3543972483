"""Duplicate audit of replicated messages across regions.

    replication audit --input REGION=URI [--input REGION=URI ...] --format json|parquet|capture
                --watermark "30 seconds" --output URI [--expect SRC:DST ...]
                [--since TIME] [--until TIME] [--streaming [--topology topology.json]]
                [--master MASTER | --remote sc://HOST:PORT]

Runs as ``replication audit ...`` and ``python -m replication.audit ...`` (a local ``local[*]``
session unless ``--master`` says otherwise, a Spark Connect session with ``--remote``), and
unchanged as a file, ``spark-submit .../dedup_audit.py ...``, where ``replication`` is
importable (installed, or shipped with ``--py-files``; see spark/README.md). In a checkout the
package is the top-level ``spark``. REGION labels must be the namespaces' logical names from the
topology: they are compared with ``repl-origin`` / ``repl-path``.

Inputs and the output are Hadoop URIs (``abfss://``, ``wasbs://``, ``dbfs:/``, ``viewfs://``,
``file://``) or plain paths, read and written through Spark and the Hadoop filesystems of the
session, never the local disk of the machine running Python (``_storage``). Writes
``URI/unique/`` (parquet, one row per message id: its first copy), ``URI/duplicates/`` (parquet,
the copies nobody should see and those read twice), ``URI/report.json`` and
``URI/report.html``, staged and moved into place at the end, ``report.json`` last.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    # Run as a file (spark-submit .../dedup_audit.py): import it as the package it is part of,
    # ``replication.audit`` where the wheel installed it, ``spark`` in a checkout; a copy of
    # this file alone (a Synapse job definition's ``file``) uses the ``replication.audit`` of
    # the wheel shipped beside it (``--py-files``).
    _HERE = Path(__file__).resolve().parent
    _INSTALLED = _HERE.name == "audit" and _HERE.parent.name == "replication"
    _CHECKOUT = not _INSTALLED and (_HERE / "_audit.py").is_file()
    if _INSTALLED or _CHECKOUT:
        sys.path.insert(0, str(_HERE.parents[1] if _INSTALLED else _HERE.parent))
    __package__ = "spark" if _CHECKOUT else "replication.audit"

from pyspark.errors import PySparkException
from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from replication.exceptions import ConfigurationError
from replication.exit_codes import ExitCode

from . import _audit as audit
from ._html import LISTED_IDS, Charts, Listing, render
from ._inputs import InputError, read_inputs, select_inputs
from ._schema import ENQUEUED, MESSAGE_ID, REGION
from ._storage import OutputFolder, StorageError, files_of, is_connect, is_local_master, one_line
from ._streaming import deduplicate_stream, stream_watermark
from ._window import Window, parse_time

logger = logging.getLogger("replication.audit")

FULL = Window(None, None)
"""No ``--since`` / ``--until``: every capture file is read and every message audited."""
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

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
    output: OutputFolder,
    *,
    write_unique: bool = True,
    window: Window = FULL,
) -> AuditResult:
    """Every report figure from the normalized records of all regions; writes ``unique/`` (unless
    not ``write_unique``: the streaming mode writes its own), ``duplicates/`` and, when there
    are any, ``missing/`` and ``loops/`` to ``output`` (where :class:`OutputFolder` stages them).

    With a bounded ``window`` only the messages whose first copy was enqueued in it are audited
    (``records`` hold their copies and those of the margins, see ``_window``).

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
    if window.bounded:
        summary = summary.where(
            audit.Summary(index).first_time_in(_micros(window.since), _micros(window.until))
        )
    summary = hold(summary)
    try:
        observed = Observation("figures")
        figured = summary.observe(observed, *audit.figure_columns(index, expect, watermark))
        if write_unique:
            write_parquet(audit.unique_rows(figured, index), output.path("unique"))
            logger.info("wrote unique/")
        else:
            figured.write.format("noop").mode("overwrite").save()
        figures = audit.Figures(observed.get, index)
        invalid = int(observed_input.get["invalid"])
        total, unique = figures.total, figures["unique"]
        logger.info("read %d records (%d invalid, without message id or time)", total, invalid)
        time_range = figures.time_range
        axis = audit.TimeAxis.spanning(*time_range) if time_range else None
        # The distributions have a few thousand rows: one shuffle partition, not one per core.
        with session_conf(spark, {"spark.sql.shuffle.partitions": "1"}):
            distributions = audit.distributions(summary, index, axis, watermark)
        logger.info("lags of %d region pairs", len(distributions.lag_summary))
        unlisted = Observation("unlisted") if figures["unlisted"] else None
        duplicates = audit.duplicate_copies(
            summary,
            index,
            watermark,
            expect,
            audit.unlisted_copies(
                records, summary, index, watermark, expect, figures["unlisted"], unlisted
            )
            if unlisted is not None
            else None,
        )
        write_parquet(duplicates, output.path("duplicates"))
        late = figures.late + (0 if unlisted is None else int(unlisted.get["late"]))
        logger.info("wrote duplicates/ (%d late copies)", late)
        regions_report = figures.region_report(
            None if unlisted is None else [int(unlisted.get[f"repeats{i}"]) for i in index.numbers]
        )
        expected = sum(region["expected_replicas"] for region in regions_report.values())
        unexpected = sum(region["unexpected_duplicates"] for region in regions_report.values())
        logger.info(
            "%d unique messages, %d expected replicas, %d unexpected duplicates",
            unique,
            expected,
            unexpected,
        )
        logger.info("missing per region: %s", {r: f["missing"] for r, f in regions_report.items()})
        missing_total = sum(region["missing"] for region in regions_report.values())
        listings = {
            "missing": write_listing(
                audit.missing_rows(summary, index, expect), missing_total, output, "missing"
            ),
            "loops": write_listing(
                audit.looping_rows(summary, index), figures["loops"], output, "loops"
            ),
        }
    finally:
        release(summary)
    report = {
        "total_records": total,
        "unique_messages": unique,
        "duplicate_records": total - unique,
        "expected_replicas": expected,
        "unexpected_duplicates": unexpected,
        "capture_repeats": sum(region["capture_repeats"] for region in regions_report.values()),
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


def _micros(moment: datetime | None) -> int | None:
    """µs since the epoch, as the summary's times are."""
    if moment is None:
        return None
    return (moment - EPOCH) // timedelta(microseconds=1)


def write_listing(rows: DataFrame, count: int, output: OutputFolder, name: str) -> Listing:
    """Write ``rows`` to output ``name`` as one CSV file, earliest first, when ``count`` > 0,
    and read its first ``LISTED_IDS`` rows back for the page (through Spark: the file is
    wherever ``output`` is)."""
    if count == 0:
        return Listing(None, [])
    folder = output.path(name)
    ordered = rows.repartition(1).sortWithinPartitions(ENQUEUED, MESSAGE_ID)
    ordered.write.mode("overwrite").option("header", "true").csv(folder)
    spark = rows.sparkSession
    written = spark.read.option("header", "true").csv(folder)
    first = written.select("*", F.col("_metadata.file_name").alias(_FILE)).limit(LISTED_IDS)
    collected = first.collect()
    listed = [
        {key: "" if value is None else str(value) for key, value in row.asDict().items()}
        for row in collected
    ]
    file_name = listed[0].pop(_FILE) if listed else None
    for row in listed:
        row.pop(_FILE, None)
    logger.info("wrote %s (%d rows)", name, count)
    return Listing(file_name, listed)


_FILE = "_listing_file"
_TIMESTAMP_TYPE = "spark.sql.parquet.outputTimestampType"
_CACHE_COMPRESSED = "spark.sql.inMemoryColumnarStorage.compressed"


def hold(frame: DataFrame) -> DataFrame:
    """Compute ``frame`` now and keep it (memory, spilling to disk) for the reads that follow.

    On a local master of a classic session the rows are kept as they are
    (``localCheckpoint``): Spark's columnar cache converts every row into compressed column
    batches with statistics, which took longer than the aggregation that made the rows
    (measured at 1M messages: 3.4 s of CPU against 0.4 s). The checkpoint is eager: a lazy
    one, filled by writing ``unique/``, saved a job at 1M messages but ran the 10M audit 7-25 %
    slower (interleaved with this one, same files and process). A local checkpoint is not
    recomputed when an executor is lost, which on a local master is the driver itself; on a
    cluster, and through Spark Connect (where freeing a checkpoint needs a JVM handle), the
    columnar cache is used (uncompressed: compressing it cost more time than it saved), which
    Spark recomputes after a loss.
    """
    spark = frame.sparkSession
    if not is_connect(spark) and is_local_master(spark):
        return frame.localCheckpoint(eager=True)
    with session_conf(spark, {_CACHE_COMPRESSED: "false"}):
        frame.persist()
    return frame


def release(frame: DataFrame) -> None:
    """Free what ``hold`` kept."""
    if frame.is_cached:
        frame.unpersist()
        return
    if is_connect(frame.sparkSession):
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


DICTIONARY_COLUMNS = (REGION, "origin", "first_region", "copies", "kind")
"""The outputs' columns with few distinct values: the only ones Parquet dictionary-encodes."""


def write_parquet(frame: DataFrame, uri: str) -> None:
    """Write ``frame`` to ``uri`` (replacing it), the way the audit's outputs are written.

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
        writer.parquet(uri)


def _size_shuffles_for_local_runs(spark: SparkSession) -> None:
    """On ``local[*]``, unless configured, shuffle into 2 partitions per core instead of 200.

    Spark's default of 200 suits clusters; on one machine each of those tasks costs more than
    the rows it sorts, and an audit of a few thousand records spent most of its minute on them.
    A classic session only: it asks the driver's ``SparkContext``, which Spark Connect clients
    do not have (a Connect server's administrator sizes its shuffles).
    """
    if is_connect(spark):
        return
    context = spark.sparkContext
    if (context.master or "").startswith("local") and not context.getConf().contains(
        "spark.sql.shuffle.partitions"
    ):
        spark.conf.set("spark.sql.shuffle.partitions", str(2 * context.defaultParallelism))


DESCRIPTION = __doc__.split("\n\n")[0]


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the audit's arguments to ``parser`` (``replication audit`` and this module's own)."""
    parser.add_argument(
        "--input",
        action="append",
        required=True,
        metavar="REGION=URI",
        help="a region's capture folder: a path or any Hadoop URI (abfss://, dbfs:/, file://...)",
    )
    parser.add_argument(
        "--format",
        choices=["json", "parquet", "capture"],
        default="json",
        help="what the inputs hold: json or parquet records (message_id, enqueued_time_utc, "
        "properties), or capture: Event Hubs Capture's Avro files (default: json)",
    )
    parser.add_argument(
        "--watermark",
        help="how far apart copies may be: 30 seconds unless given; --streaming: see --topology",
    )
    parser.add_argument(
        "--output", required=True, metavar="URI", help="a path or any Hadoop URI, like --input"
    )
    parser.add_argument(
        "--expect",
        action="append",
        default=[],
        metavar="SRC:DST",
        help="two regions of --input that replication connects, one pair per --expect: a message "
        "of SRC missing in DST is a loss, a copy where no pair sends it an unexpected duplicate "
        "(default: every region holds every message)",
    )
    parser.add_argument(
        "--since",
        metavar="TIME",
        help="audit the messages first enqueued at or after this ISO-8601 time (UTC unless "
        "it says otherwise), reading only the capture partitions it needs",
    )
    parser.add_argument("--until", metavar="TIME", help="... and before this one (see --since)")
    parser.add_argument(
        "--streaming",
        action="store_true",
        help="deduplicate as a Structured Streaming job, watermarked on each message's origin "
        "enqueue time (the other figures in batch; see --topology)",
    )
    parser.add_argument(
        "--topology",
        metavar="FILE",
        help="--streaming without --watermark: watermark the stream on the longest "
        "retry.outageTolerance of this topology (default: the default tolerance, 1 hour)",
    )
    parser.add_argument("--master", help="Spark master when none is configured (local[*])")
    parser.add_argument(
        "--remote",
        metavar="URL",
        help="run through Spark Connect, e.g. sc://host:15002 (SPARK_REMOTE says the same)",
    )


def prepare(args: argparse.Namespace) -> None:
    """Check the arguments together and derive ``inputs``, ``expect_pairs``,
    ``watermark_seconds`` and ``window`` from them.

    Raises:
        argparse.ArgumentTypeError: what is wrong, in one line.
    """
    if args.topology and not args.streaming:
        raise argparse.ArgumentTypeError(
            "--topology sets the watermark of --streaming; add --streaming"
        )
    if args.master and args.remote:
        raise argparse.ArgumentTypeError(
            "--master and --remote: a Spark Connect server has its own master; give one"
        )
    inputs: dict[str, str] = {}
    for item in args.input:
        region, sep, path = item.partition("=")
        if not sep or not region or not path:
            raise argparse.ArgumentTypeError(f"--input {item!r}: expected REGION=URI")
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
    try:
        since = parse_time(args.since, "--since") if args.since else None
        until = parse_time(args.until, "--until") if args.until else None
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    if since is not None and until is not None and until <= since:
        raise argparse.ArgumentTypeError(f"--until {args.until} is not after --since {args.since}")
    if (since or until) and args.streaming:
        raise argparse.ArgumentTypeError(
            "--since/--until select the files of a batch audit; --streaming reads whole folders"
        )
    args.window = Window(since, until)
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


class SessionError(RuntimeError):
    """No Spark session could be had (a Spark Connect server that is not there); one line."""


def start_session(args: argparse.Namespace) -> SparkSession:
    """The session the audit runs in: the platform's when there is one (``getOrCreate``),
    a Spark Connect session with ``--remote`` (or ``SPARK_REMOTE``), else ``--master``.

    Raises:
        SessionError: the Spark Connect client is missing or its server does not answer.
    """
    builder = SparkSession.builder.appName("replication-dedup-audit")
    remote = args.remote or os.environ.get("SPARK_REMOTE")
    if remote:
        builder = builder.remote(remote)
    elif args.master:
        builder = builder.master(args.master)
    if not remote and not sys.stderr.isatty():  # progress bars only where someone watches them
        builder = builder.config("spark.ui.showConsoleProgress", "false")
    if remote:
        _reach_connect_server(remote)
    return builder.getOrCreate()


CONNECT_TIMEOUT_SECONDS = 30.0
"""How long ``--remote`` waits for its server's channel before giving up (the client itself
connects lazily and retries an absent server for minutes, inside the first query)."""


def _reach_connect_server(remote: str) -> None:
    """Open the gRPC channel to ``remote`` the way the client will (pyspark's own builder of
    ``sc://`` URLs, TLS and token included) and wait until it is ready.

    Raises:
        SessionError: the client's dependencies are missing, or no server answers in time.
    """
    try:
        import grpc
        from pyspark.sql.connect.client.core import DefaultChannelBuilder
    except ImportError as error:
        raise SessionError(
            f"--remote {remote}: the Spark Connect client needs pyspark's connect dependencies "
            f"(pip install 'pyspark[connect]'): {one_line(error)}"
        ) from None
    try:
        channel = DefaultChannelBuilder(remote).toChannel()
    except Exception as error:  # a malformed URL: PySparkValueError
        raise SessionError(f"--remote {remote}: {one_line(error)}") from None
    try:
        grpc.channel_ready_future(channel).result(timeout=CONNECT_TIMEOUT_SECONDS)
    except grpc.FutureTimeoutError:
        raise SessionError(
            f"--remote {remote}: no Spark Connect server answered within "
            f"{CONNECT_TIMEOUT_SECONDS:g} s"
        ) from None
    finally:
        channel.close()


def run(args: argparse.Namespace) -> int:
    """Audit what ``args`` (:func:`configure`, :func:`prepare`) names; the exit code.

    Bad input (an input or output that cannot be reached, a foreign file, an empty window, a
    Spark Connect server that is not there) ends the audit with one line and exit code 2;
    nothing it staged is left looking complete (:class:`OutputFolder`).
    """
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
    try:
        spark = start_session(args)
    except SessionError as error:
        logger.error("%s", error)
        return ExitCode.CONFIGURATION
    _size_shuffles_for_local_runs(spark)
    # Capture times carry no zone and are UTC; JSON times carry their own offset.
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    output = OutputFolder(spark, args.output)
    try:
        output.open()
        margin = timedelta(seconds=args.watermark_seconds)
        selected = select_inputs(files_of(spark), args.inputs, args.format, args.window, margin)
        records = read_inputs(
            spark, {region: s.files for region, s in selected.items()}, args.format
        )
        if args.window.bounded:
            records = records.where(_within(args.window, margin))
        result = run_audit(
            records,
            list(args.inputs),
            args.watermark_seconds,
            args.expect_pairs,
            output,
            write_unique=not args.streaming,
            window=args.window,
        )
        if args.window.bounded:
            result.report["window"] = {
                **args.window.describe(),
                "margin_seconds": args.watermark_seconds,
                "files_read": sum(len(s.files) for s in selected.values()),
                "files_skipped": sum(s.skipped for s in selected.values()),
            }
        if args.streaming:
            _stream(spark, args, output, result)
        output.write_text("report.html", render(result.report, result.charts))
        output.write_text("report.json", json.dumps(result.report, indent=2) + "\n")
        output.commit()
    except (InputError, StorageError) as error:
        output.abort()
        logger.error("%s", error)
        return ExitCode.CONFIGURATION
    except Exception as error:
        output.abort()
        if not _is_spark_error(error):
            raise
        # A file that is not what its name says, storage that fails mid-job: Spark's error,
        # in one line (its stack trace at DEBUG).
        logger.debug("the audit failed", exc_info=True)
        logger.error("the audit failed while Spark read or wrote data: %s", one_line(error))
        return ExitCode.CONFIGURATION
    except BaseException:
        output.abort()
        raise
    logger.info("wrote %s", args.output)
    print(json.dumps(result.report, indent=2))
    return ExitCode.OK


def _is_spark_error(error: BaseException) -> bool:
    """Whether ``error`` came from Spark's side: PySpark's own errors (a job's failure, the
    Connect server's answers) or a Java exception through the classic session's gateway."""
    return isinstance(error, PySparkException) or type(error).__name__ == "Py4JJavaError"


def _within(window: Window, margin: timedelta) -> Column:
    """Records enqueued in ``window`` widened by ``margin`` (and those without a time, which
    are counted as invalid)."""
    time = F.col(ENQUEUED)
    inside = F.lit(True)
    if window.since is not None:
        inside = inside & (time >= F.lit(window.since - margin))
    if window.until is not None:
        inside = inside & (time < F.lit(window.until + margin))
    return time.isNull() | inside


def _stream(
    spark: SparkSession, args: argparse.Namespace, output: OutputFolder, result: AuditResult
) -> None:
    """``--streaming``: deduplicate with Structured Streaming into ``stream_unique/`` and reduce
    that to ``unique/``; the report gets the stream's figures."""
    sink = output.path("stream_sink")
    # A fresh checkpoint in the staging folder (classic) or the new output folder (Connect):
    # each audit streams its inputs from the start, never resuming after an earlier run's files.
    checkpoint = output.path("stream_checkpoint")
    stats = deduplicate_stream(
        spark, args.inputs, args.format, args.stream_watermark.spark_interval, sink, checkpoint
    )
    streamed = spark.read.parquet(sink)
    write_parquet(streamed, output.path("stream_unique"))
    extra = streamed.count() - streamed.select(MESSAGE_ID).distinct().count()
    result.report["late_records"] = extra + stats.dropped_by_watermark
    result.report["streaming"] = {
        "watermark_seconds": args.stream_watermark.delay.total_seconds(),
        "micro_batches": stats.batches,
        "max_state_rows": stats.max_state_rows,
        "dropped_by_watermark": stats.dropped_by_watermark,
    }
    write_parquet(audit.unique_messages(streamed), output.path("unique"))


if __name__ == "__main__":
    sys.exit(main())

"""``--streaming``: Structured Streaming deduplication within an event-time watermark.

Each region's input folder is a file stream; the union is deduplicated with
``dropDuplicatesWithinWatermark(["message_id"])`` (Spark >= 3.5), written to parquet with
``availableNow`` (process what is there, then stop). Files are read one per micro-batch per
region, in modification-time order, as they would arrive.

**Event time: the origin's enqueue time.** After an outage, copies of one message arrive hours
apart: a target that was down receives its replicas when it comes back, each enqueued there at
that moment. A watermark on each copy's own enqueue time would have forgotten the message by
then and emit the late copy as a second row. Every replica carries its origin's enqueue time
instead: ``repl-enqueued-time`` (the documentation spells it ``repl-enqueue-time``) lists each
hop's source enqueue time, oldest first, so its first entry is the enqueue time in the
namespace where the message was published (``replication.properties``). An original, which has
no such property, is that time itself. All copies of a message thus share one event time, so a
copy is either recognized (its message is still in the state) or, when the stream has moved
more than the watermark past its origin time, dropped by the watermark and counted. It is never
emitted twice.

**The watermark delay** must cover the longest time a replica can trail its original: the
topology's ``retry.outageTolerance`` (:func:`stream_watermark`). Spark keeps a message id
until the watermark passes its event time plus the delay, i.e. until the stream has moved two
delays past it: the state holds ``rate * 2 * delay`` ids at most. It lives in the RocksDB state
store (off the JVM heap, on local disk) with changelog checkpointing (each micro-batch's
checkpoint writes the rows that changed, not a snapshot of the whole state).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from replication.properties import REPL_ENQUEUE_TIME_DOCS_SPELLING, REPL_ENQUEUED_TIME, SEPARATOR

from ._audit import is_valid
from ._inputs import InputError, normalize, original_message_id
from ._schema import ENQUEUED, INPUT_SCHEMA, MESSAGE_ID, PROPERTIES, RECORD_COLUMNS

logger = logging.getLogger(__name__)

ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
STATE_STORE_SETTINGS = {
    "spark.sql.streaming.stateStore.providerClass": ROCKSDB_PROVIDER,
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
}
"""Spark's RocksDB state store with changelog checkpointing (both names as in Spark 4's
``SQLConf`` / ``RocksDBConf`` and its Structured Streaming guide)."""

PROGRESS_RETENTION = 100_000
"""Micro-batch progress reports the query keeps (``spark.sql.streaming.numRecentProgressUpdates``,
100 by default): the rows dropped by the watermark are summed over all of them, and a capture
folder read one file per micro-batch easily makes more than 100."""

ORIGIN_ENQUEUED = "origin_enqueued_time_utc"
"""The event time the stream is watermarked on: the origin's enqueue time of each copy."""

EARLIEST_ENQUEUE_TIME = "1970-01-01 00:00:00"
"""Origin times before this are no enqueue time: the .NET library's Service Bus tasks stamp
``ScheduledEnqueueTime``, which is ``0001-01-01`` on a message that was not scheduled."""


@dataclass(frozen=True)
class StreamWatermark:
    """The stream's watermark delay and where it came from (for the log and the report)."""

    delay: timedelta
    source: str

    @property
    def spark_interval(self) -> str:
        """The delay as ``withWatermark`` takes it, e.g. ``"10800 seconds"``."""
        milliseconds = self.delay // timedelta(milliseconds=1)
        if milliseconds % 1000 == 0:
            return f"{milliseconds // 1000} seconds"
        return f"{milliseconds} milliseconds"


def stream_watermark(explicit_seconds: float | None, topology_path: str | None) -> StreamWatermark:
    """The watermark delay of the stream: ``--watermark`` when given, else the longest
    ``retry.outageTolerance`` of ``--topology``, else the default tolerance a task gets.

    Raises:
        replication.exceptions.ConfigurationError: the topology cannot be read or is invalid
            (the message names the file and JSON path).
    """
    if explicit_seconds is not None:
        return StreamWatermark(timedelta(seconds=explicit_seconds), "--watermark")
    # Imported here: the topology needs pydantic, which a run with --watermark does not.
    from replication.topology import RetrySpec, load_topology, longest_outage_tolerance

    if topology_path is not None:
        topology = load_topology(topology_path, user_code=False)
        return StreamWatermark(
            longest_outage_tolerance(topology), f"longest retry.outageTolerance in {topology_path}"
        )
    return StreamWatermark(RetrySpec().outage_tolerance, "default retry.outageTolerance")


def origin_enqueued_time() -> Column:
    """The enqueue time in the namespace where the message was published: the first entry of
    ``repl-enqueued-time`` (either spelling; this library writes ISO-8601 with milliseconds, the
    .NET library ``yyyy-MM-dd HH:mm:ssZ``), else, for an original or a replica whose entry is
    not a time, the copy's own enqueue time."""
    stamped = F.coalesce(
        F.col(PROPERTIES).getItem(REPL_ENQUEUED_TIME),
        F.col(PROPERTIES).getItem(REPL_ENQUEUE_TIME_DOCS_SPELLING),
    )
    origin = F.substring_index(stamped, SEPARATOR, 1).try_cast("timestamp")
    plausible = F.when(origin >= F.lit(EARLIEST_ENQUEUE_TIME).cast("timestamp"), origin)
    return F.coalesce(plausible, F.col(ENQUEUED))


@dataclass(frozen=True)
class StreamStats:
    """What the streaming query reported."""

    dropped_by_watermark: int
    max_state_rows: int
    batches: int


def _stream_region(spark: SparkSession, region: str, path: str, fmt: str) -> DataFrame:
    """A region's folder as a file stream, subfolders included: a capture task writes hourly
    folders (``yyyy/MM/dd/HH/``), and the batch audit, which already checked those files, lists
    the folder the same way. One file per micro-batch, oldest first."""
    reader = spark.readStream.option("maxFilesPerTrigger", 1).option("recursiveFileLookup", "true")
    if fmt == "json":
        stream = reader.schema(INPUT_SCHEMA).json(path)
    elif fmt == "parquet":
        schema = spark.read.option("recursiveFileLookup", "true").parquet(path).schema
        stream = reader.schema(schema).parquet(path)
    else:
        raise InputError("--streaming reads json or parquet inputs; use batch mode for capture")
    return normalize(stream, region)


def deduplicate_stream(
    spark: SparkSession,
    inputs: dict[str, str],
    fmt: str,
    watermark: str,
    output: str,
    checkpoint: str,
) -> StreamStats:
    """Run the streaming deduplication to completion; its rows land in ``output``.

    ``watermark`` is the delay, e.g. ``"3600 seconds"`` (:attr:`StreamWatermark.spark_interval`),
    on the origin's enqueue time (see the module docstring).
    """
    for key, value in STATE_STORE_SETTINGS.items():
        spark.conf.set(key, value)
    spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", str(PROGRESS_RETENTION))
    streams = [_stream_region(spark, region, path, fmt) for region, path in inputs.items()]
    union = streams[0]
    for stream in streams[1:]:
        union = union.unionByName(stream)
    deduplicated = (
        union.withColumn(MESSAGE_ID, original_message_id())
        .where(is_valid())
        .select(*RECORD_COLUMNS, origin_enqueued_time().alias(ORIGIN_ENQUEUED))
        .withWatermark(ORIGIN_ENQUEUED, watermark)
        .dropDuplicatesWithinWatermark([MESSAGE_ID])
        .select(*RECORD_COLUMNS)
    )
    query = (
        deduplicated.writeStream.format("parquet")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start(output)
    )
    query.awaitTermination()
    dropped = 0
    state_rows = 0
    progress = query.recentProgress
    if len(progress) >= PROGRESS_RETENTION:
        logger.warning(
            "streaming: more than %d micro-batches; rows dropped by the watermark are counted "
            "over the last %d only",
            PROGRESS_RETENTION,
            PROGRESS_RETENTION,
        )
    for item in progress:
        for operator in item.stateOperators:
            dropped += operator.numRowsDroppedByWatermark
            state_rows = max(state_rows, operator.numRowsTotal)
    logger.info(
        "streaming: %d micro-batches, %d rows dropped by the watermark, at most %d state rows",
        len(progress),
        dropped,
        state_rows,
    )
    return StreamStats(dropped, state_rows, len(progress))


__all__ = [
    "ORIGIN_ENQUEUED",
    "STATE_STORE_SETTINGS",
    "StreamStats",
    "StreamWatermark",
    "deduplicate_stream",
    "origin_enqueued_time",
    "stream_watermark",
]

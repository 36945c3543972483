"""The audit itself: pure DataFrame -> DataFrame functions over normalized records.

Definitions (they are the report's keys; see spark/README.md):

- a *copy* is one record, in one region; the *first copy* of a message is its earliest copy by
  enqueue time (ties: region name, then sequence number), which is what ``unique/`` keeps;
- the *origin* of a message is its ``repl-origin`` property, or else the region of its earliest
  copy without ``repl-origin`` (the copy an application published);
- the *lag* of a message in region R is R's first copy's enqueue time minus the origin's first
  copy's enqueue time;
- a *loop* is a message whose ``repl-path`` names a namespace twice or whose ``repl-hops``
  exceeds the number of regions - 1;
- a *late record* is a duplicate copy enqueued more than the watermark after the message's
  first copy: streaming deduplication within the watermark cannot recognize it.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from replication.properties import REPL_HOPS, REPL_ORIGIN, REPL_PATH, SEPARATOR

from ._schema import ENQUEUED, MESSAGE_ID, PROPERTIES, REGION, SEQUENCE

_ORDER = [ENQUEUED, REGION, SEQUENCE]


def split_invalid(records: DataFrame) -> tuple[DataFrame, DataFrame]:
    """(records with a message id and an enqueue time, the others)."""
    valid = F.col(MESSAGE_ID).isNotNull() & (F.length(MESSAGE_ID) > 0) & F.col(ENQUEUED).isNotNull()
    return records.where(valid), records.where(~valid)


def unique_messages(records: DataFrame) -> DataFrame:
    """One row per message id: its first copy (an aggregation, so the survivor is defined)."""
    order = F.struct(*[F.col(c) for c in _ORDER])
    first = F.min_by(F.struct(*[F.col(c) for c in _ORDER], F.col(PROPERTIES)), order).alias("first")
    return (
        records.groupBy(MESSAGE_ID)
        .agg(first, F.count(F.lit(1)).alias("copies"))
        .select(
            MESSAGE_ID,
            F.col("first").getField(REGION).alias(REGION),
            F.col("first").getField(ENQUEUED).alias(ENQUEUED),
            F.col("first").getField(SEQUENCE).alias(SEQUENCE),
            F.col("first").getField(PROPERTIES).alias(PROPERTIES),
            "copies",
        )
    )


def duplicate_copies(records: DataFrame, watermark_seconds: float) -> DataFrame:
    """Every copy but the first, with the first copy's time and whether it is *late*."""
    window = Window.partitionBy(MESSAGE_ID).orderBy(*_ORDER)
    ranked = records.withColumn("copy_number", F.row_number().over(window)).withColumn(
        "first_enqueued_time_utc", F.min(ENQUEUED).over(Window.partitionBy(MESSAGE_ID))
    )
    delay = F.col(ENQUEUED).cast("double") - F.col("first_enqueued_time_utc").cast("double")
    return ranked.where(F.col("copy_number") > 1).select(
        MESSAGE_ID,
        REGION,
        ENQUEUED,
        SEQUENCE,
        "copy_number",
        "first_enqueued_time_utc",
        (delay > F.lit(watermark_seconds)).alias("late"),
    )


def first_copy_per_region(records: DataFrame) -> DataFrame:
    """(message_id, region) -> first enqueue time there, copies there, origin property."""
    return records.groupBy(MESSAGE_ID, REGION).agg(
        F.min(ENQUEUED).alias(ENQUEUED),
        F.count(F.lit(1)).alias("copies"),
        F.max(F.col(PROPERTIES).getItem(REPL_ORIGIN)).alias("declared_origin"),
    )


def origins(per_region: DataFrame) -> DataFrame:
    """message_id -> origin region and the origin's first enqueue time (null when unseen)."""
    undeclared = F.col("declared_origin").isNull()
    # Without repl-origin anywhere, the earliest copy that has none is the published one.
    published = F.min_by(
        F.when(undeclared, F.col(REGION)), F.when(undeclared, F.struct(ENQUEUED, REGION))
    )
    origin = per_region.groupBy(MESSAGE_ID).agg(
        F.coalesce(F.max("declared_origin"), published).alias("origin")
    )
    origin_times = per_region.select(
        MESSAGE_ID, F.col(REGION).alias("origin"), F.col(ENQUEUED).alias("origin_time")
    )
    return origin.join(origin_times, [MESSAGE_ID, "origin"], "left")


def lags(per_region: DataFrame, message_origins: DataFrame) -> DataFrame:
    """One row per message and non-origin region holding it: ``pair`` and ``lag_seconds``."""
    joined = per_region.join(message_origins, MESSAGE_ID).where(
        (F.col(REGION) != F.col("origin")) & F.col("origin_time").isNotNull()
    )
    lag = F.col(ENQUEUED).cast("double") - F.col("origin_time").cast("double")
    return joined.select(
        MESSAGE_ID,
        F.concat(F.col("origin"), F.lit("->"), F.col(REGION)).alias("pair"),
        lag.alias("lag_seconds"),
    )


def lag_summary(lag_rows: DataFrame) -> dict[str, dict[str, float | int]]:
    """Per pair: count, exact p50/p95/p99 and max of the lag in seconds."""
    rows = (
        lag_rows.groupBy("pair")
        .agg(
            F.count(F.lit(1)).alias("count"),
            F.percentile("lag_seconds", F.array(F.lit(0.5), F.lit(0.95), F.lit(0.99))).alias("p"),
            F.max("lag_seconds").alias("max"),
        )
        .collect()
    )
    return {
        row["pair"]: {
            "count": int(row["count"]),
            "p50": round(float(row["p"][0]), 3),
            "p95": round(float(row["p"][1]), 3),
            "p99": round(float(row["p"][2]), 3),
            "max": round(float(row["max"]), 3),
        }
        for row in sorted(rows, key=lambda r: r["pair"])
    }


def loop_messages(records: DataFrame, region_count: int) -> DataFrame:
    """Message ids whose path repeats a namespace or whose hop count exceeds regions - 1."""
    path = F.split(F.coalesce(F.col(PROPERTIES).getItem(REPL_PATH), F.lit("")), SEPARATOR)
    path = F.filter(path, lambda part: part != "")
    repeats = F.size(F.array_distinct(path)) < F.size(path)
    hops = F.col(PROPERTIES).getItem(REPL_HOPS).cast("long")
    too_many = hops > F.lit(max(region_count - 1, 0))
    return records.where(repeats | F.coalesce(too_many, F.lit(False))).select(MESSAGE_ID).distinct()


def missing_per_region(
    per_region: DataFrame,
    message_origins: DataFrame,
    regions: Iterable[str],
    expect: list[tuple[str, str]],
    *,
    unique_count: int,
    held: dict[str, int],
) -> dict[str, int]:
    """Messages a region should hold but does not.

    With ``expect`` (SRC, DST) pairs, a message originating in SRC must be in DST (a join over
    those messages only); without, every region must hold every message (all-active), so a
    region misses ``unique_count`` minus the messages it ``held``, with no join at all.
    """
    regions = list(regions)
    if not expect:
        return {region: unique_count - held.get(region, 0) for region in regions}
    present = per_region.select(MESSAGE_ID, F.col(REGION).alias("holder"))
    pairs = per_region.sparkSession.createDataFrame(expect, "origin string, holder string")
    wanted = message_origins.join(F.broadcast(pairs), "origin").select(MESSAGE_ID, "holder")
    absent = wanted.distinct().join(present, [MESSAGE_ID, "holder"], "left_anti")
    rows = absent.groupBy("holder").count().collect()
    counts = {row["holder"]: int(row["count"]) for row in rows}
    return {region: counts.get(region, 0) for region in regions}


def region_counts(per_region: DataFrame) -> dict[str, dict[str, int]]:
    """Per region: records, distinct messages and in-region duplicates."""
    rows = per_region.groupBy(REGION).agg(
        F.sum("copies").alias("records"), F.count(F.lit(1)).alias("unique_messages")
    )
    return {
        row[REGION]: {
            "records": int(row["records"]),
            "unique_messages": int(row["unique_messages"]),
            "in_region_duplicates": int(row["records"]) - int(row["unique_messages"]),
        }
        for row in rows.collect()
    }


def timeline(records: DataFrame, buckets: int = 60) -> dict[str, Any]:
    """Records per region per time bucket, for the "messages over time" chart."""
    seconds = F.col(ENQUEUED).cast("double")
    bounds = records.agg(F.min(seconds).alias("lo"), F.max(seconds).alias("hi")).first()
    if bounds is None or bounds["lo"] is None:
        return {"start": None, "bucket_seconds": 0, "series": {}}
    lo, hi = float(bounds["lo"]), float(bounds["hi"])
    width = max((hi - lo) / buckets, 0.001)
    index = F.least(
        F.floor((F.col(ENQUEUED).cast("double") - F.lit(lo)) / F.lit(width)), F.lit(buckets - 1)
    )
    rows = records.groupBy(REGION, index.alias("bucket")).count().collect()
    series: dict[str, list[int]] = {}
    for row in rows:
        series.setdefault(row[REGION], [0] * buckets)[int(row["bucket"])] = int(row["count"])
    start = datetime.fromtimestamp(lo, UTC).isoformat()
    return {"start": start, "bucket_seconds": width, "series": series}


def lag_histograms(lag_rows: DataFrame, bins: int = 20) -> dict[str, dict[str, Any]]:
    """Per pair: ``bins`` equal-width lag buckets between the pair's min and max lag."""
    ranges = lag_rows.groupBy("pair").agg(
        F.min("lag_seconds").alias("lo"), F.max("lag_seconds").alias("hi")
    )
    joined = lag_rows.join(ranges, "pair")
    width = F.greatest((F.col("hi") - F.col("lo")) / F.lit(bins), F.lit(1e-9))
    bucket = F.least(F.floor((F.col("lag_seconds") - F.col("lo")) / width), F.lit(bins - 1))
    rows = joined.groupBy("pair", "lo", "hi", bucket.alias("bucket")).count().collect()
    histograms: dict[str, dict[str, Any]] = {}
    for row in rows:
        entry = histograms.setdefault(
            row["pair"], {"lo": float(row["lo"]), "hi": float(row["hi"]), "counts": [0] * bins}
        )
        entry["counts"][int(row["bucket"])] = int(row["count"])
    return dict(sorted(histograms.items()))

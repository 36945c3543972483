"""The audit itself: pure DataFrame -> DataFrame functions over normalized records.

Definitions (they are the report's keys; see spark/README.md):

- a *copy* is one record, in one region; the *first copy* of a message is its earliest copy by
  enqueue time (ties: the region first in name order), which is what ``unique/`` keeps;
- the *origin* of a message is its ``repl-origin`` property, or else the region of its earliest
  copy without ``repl-origin`` (the copy an application published);
- the *lag* of a message in region R is R's first copy's enqueue time minus the origin's first
  copy's enqueue time;
- a *loop* is a message whose ``repl-path`` names a namespace twice or whose ``repl-hops``
  exceeds the number of regions - 1;
- a *late record* is a duplicate copy enqueued more than the watermark after the message's
  first copy: streaming deduplication within the watermark cannot recognize it.

How it stays fast: copies are reduced to a few numbers as they are read (time in µs, region
number, a copy id, origin number, loop flag; the properties map is not carried further), and
every figure is derived from one row per message (``message_summary``), an aggregation whose
results are all 64-bit numbers, which Spark runs as a hash aggregation rather than sorting every
copy. ``unique/`` is written straight from that summary; only the duplicates need the copies
again, matched with their message by one hash join (``duplicate_copies``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from replication.properties import REPL_HOPS, REPL_ORIGIN, REPL_PATH, SEPARATOR

from ._schema import ENQUEUED, MESSAGE_ID, PROPERTIES, REGION, SEQUENCE

MAX_REGIONS = 36
"""A copy's ordering key is ``time_µs * regions + region``; with at most 36 regions it fits a
64-bit integer for every timestamp Spark can hold (up to 9999-12-31)."""


@dataclass(frozen=True)
class RegionIndex:
    """The audited regions numbered in name order, so that numbers order copies like names do."""

    names: tuple[str, ...]

    @classmethod
    def of(cls, regions: Iterable[str]) -> RegionIndex:
        names = tuple(sorted(set(regions)))
        if len(names) > MAX_REGIONS:
            raise ValueError(f"{len(names)} regions: the audit handles at most {MAX_REGIONS}")
        return cls(names)

    def __len__(self) -> int:
        return len(self.names)

    @property
    def elsewhere(self) -> int:
        """The number standing for a region outside the audit (an unknown ``repl-origin``)."""
        return len(self.names)

    def number(self, name: Column, *, others: int | None = None) -> Column:
        """The region number of ``name``; ``others`` for any other non-null name, else null."""
        numbered = F.when(F.lit(False), F.lit(None))
        for index, region in enumerate(self.names):
            numbered = numbered.when(name == region, F.lit(index))
        if others is not None:
            numbered = numbered.when(name.isNotNull(), F.lit(others))
        return numbered.cast("int")

    def name(self, number: Column) -> Column:
        """The region name of ``number`` (null for a number outside the audit)."""
        return self.pick(number, [F.lit(region) for region in self.names])

    def pick(self, number: Column, values: Sequence[Column]) -> Column:
        """``values[number]``, null when ``number`` is null or outside the audit."""
        picked = F.when(F.lit(False), F.lit(None))
        for index, value in enumerate(values):
            picked = picked.when(number == index, value)
        return picked


def is_valid() -> Column:
    """Whether a record has what the audit needs: a non-empty message id and an enqueue time."""
    return F.col(MESSAGE_ID).isNotNull() & (F.length(MESSAGE_ID) > 0) & F.col(ENQUEUED).isNotNull()


def copy_keys(records: DataFrame, regions: RegionIndex, *, replication: bool = True) -> DataFrame:
    """Valid records reduced to the numbers the audit works on.

    ``message_id``; ``t``: enqueue time in µs; ``r``: region number; ``sequence_number``;
    ``copy_id``: unique per record and the same on every read of the same ``records`` frame
    (Spark's ``monotonically_increasing_id`` over the scan, whose files were listed once when the
    frame was made), so a second pass finds the first copy again.
    With ``replication``: ``o``, the number of the declared ``repl-origin`` (null without one),
    and ``looped``, 1 when this copy's path or hop count shows a loop.
    """
    columns: list[Column | str] = [
        MESSAGE_ID,
        F.unix_micros(ENQUEUED).alias("t"),
        regions.number(F.col(REGION)).alias("r"),
        SEQUENCE,
        F.monotonically_increasing_id().alias("copy_id"),
    ]
    if replication:
        origin = F.col(PROPERTIES).getItem(REPL_ORIGIN)
        columns += [
            regions.number(origin, others=regions.elsewhere).alias("o"),
            _loop_flag(len(regions)).alias("looped"),
        ]
    return records.where(is_valid()).select(*columns)


def _loop_flag(region_count: int) -> Column:
    """1 when ``repl-path`` names a namespace twice or ``repl-hops`` > regions - 1, else 0."""
    path = F.col(PROPERTIES).getItem(REPL_PATH)
    first_separator = F.instr(path, SEPARATOR)
    # Most paths have one or two entries: compare those as strings, without building arrays.
    second_separator = F.expr(
        f"locate('{SEPARATOR}', {PROPERTIES}['{REPL_PATH}'], "
        f"instr({PROPERTIES}['{REPL_PATH}'], '{SEPARATOR}') + 1)"
    )
    head, tail = F.substring_index(path, SEPARATOR, 1), F.substring_index(path, SEPARATOR, -1)
    entries = F.array_remove(F.split(path, SEPARATOR), "")
    repeats = (
        F.when(first_separator == 0, F.lit(False))
        .when(second_separator == 0, (head == tail) & (F.length(head) > 0))
        .otherwise(F.size(F.array_distinct(entries)) < F.size(entries))
    )
    hops = F.col(PROPERTIES).getItem(REPL_HOPS).try_cast("long")  # malformed: no verdict
    too_many = F.coalesce(hops > F.lit(max(region_count - 1, 0)), F.lit(False))
    return (F.coalesce(repeats, F.lit(False)) | too_many).cast("int")


def message_summary(copies: DataFrame, regions: RegionIndex) -> DataFrame:
    """One row per message id from ``copy_keys`` rows: everything the report needs.

    ``copies``; ``loop``; ``first_t`` / ``first_r`` / ``first_sequence`` / ``first_copy`` of the
    first copy; ``origin`` (region number, ``regions.elsewhere`` for an origin outside the
    audit) and ``origin_t``; per region number i: ``n{i}`` copies there and ``t{i}`` the first
    one's time.

    Copies are ordered by one 64-bit key, ``t * regions + r``. Among copies with equal keys
    (one region, the same microsecond) the first is whichever Spark meets first; both
    ``min_by`` results come from that same copy, as they share the ordering and its updates.
    """
    count = len(regions)
    key = F.col("t") * F.lit(count) + F.col("r")
    per_region = []
    for index in range(count):
        here = F.col("r") == index
        per_region += [
            F.count(F.when(here, 1)).alias(f"n{index}"),
            F.min(F.when(here, F.col("t"))).alias(f"t{index}"),
        ]
    grouped = copies.groupBy(MESSAGE_ID).agg(
        F.min(key).alias("first_key"),
        F.min_by("copy_id", key).alias("first_copy"),
        F.min_by(SEQUENCE, key).alias("first_sequence"),
        F.max("o").alias("declared_origin"),
        F.min(F.when(F.col("o").isNull(), key)).alias("published_key"),
        F.max("looped").alias("loop"),
        *per_region,
    )
    first_r = F.pmod(F.col("first_key"), F.lit(count)).cast("int")
    first_t = F.expr(f"(first_key - pmod(first_key, {count})) div {count}")
    origin = F.coalesce(
        F.col("declared_origin"), F.pmod(F.col("published_key"), F.lit(count)).cast("int")
    )
    total = sum((F.col(f"n{index}") for index in range(1, count)), F.col("n0"))
    times = [F.col(f"t{index}") for index in range(count)]
    return grouped.select(
        MESSAGE_ID,
        total.alias("copies"),
        (F.col("loop") > 0).alias("loop"),
        first_t.alias("first_t"),
        first_r.alias("first_r"),
        "first_sequence",
        "first_copy",
        origin.alias("origin"),
        regions.pick(origin, times).alias("origin_t"),
        *[F.col(f"{c}{index}") for index in range(count) for c in ("n", "t")],
    )


def summary_figures(
    summary: DataFrame, regions: RegionIndex, expect: list[tuple[str, str]]
) -> dict[str, Any]:
    """Totals over ``message_summary`` in one pass: counts per region, loops, missing pairs."""
    columns = [
        F.count(F.lit(1)).alias("unique"),
        F.coalesce(F.sum("copies"), F.lit(0)).alias("total"),
        F.count(F.when(F.col("loop"), 1)).alias("loops"),
    ]
    for index in range(len(regions)):
        columns += [
            F.coalesce(F.sum(f"n{index}"), F.lit(0)).alias(f"records{index}"),
            F.count(F.when(F.col(f"n{index}") > 0, 1)).alias(f"held{index}"),
            F.min(f"t{index}").alias(f"lo{index}"),
            F.max(f"t{index}").alias(f"hi{index}"),
        ]
    for pair, (source, target) in enumerate(expect):
        absent = (F.col("origin") == regions.names.index(source)) & (
            F.col(f"n{regions.names.index(target)}") == 0
        )
        columns.append(F.count(F.when(absent, 1)).alias(f"absent{pair}"))
    row = summary.agg(*columns).first()
    assert row is not None  # a global aggregation always yields one row
    return row.asDict()


def region_report(
    figures: dict[str, Any], regions: RegionIndex, expect: list[tuple[str, str]]
) -> dict[str, dict[str, int]]:
    """Per region: records, distinct messages, in-region duplicates and missing messages.

    With ``expect`` (SRC, DST) pairs, a message originating in SRC must be in DST; without, every
    region must hold every message (all-active).
    """
    report = {}
    for index, region in enumerate(regions.names):
        records, held = int(figures[f"records{index}"]), int(figures[f"held{index}"])
        if expect:
            missing = sum(
                int(figures[f"absent{pair}"])
                for pair, (_, target) in enumerate(expect)
                if target == region
            )
        else:
            missing = int(figures["unique"]) - held
        report[region] = {
            "records": records,
            "unique_messages": held,
            "in_region_duplicates": records - held,
            "missing": missing,
        }
    return report


def lags(summary: DataFrame, regions: RegionIndex) -> DataFrame:
    """The lag distribution: per region ``pair`` and ``lag_seconds`` value, how many ``messages``.

    A message counts once for every non-origin region holding it. ``pair`` is
    ``origin * regions + target`` (numbers are cheaper to group than names; ``pair_name`` turns
    it into ``"SRC->DST"``). Equal lags are counted together first: enqueue times have
    millisecond resolution in Azure, so millions of lags take a few thousand values, and the
    exact percentiles then sort those values instead of every lag.
    """
    lag = _per_region(regions, lambda i: (F.col(f"t{i}") - F.col("origin_t")) / F.lit(1e6))
    rows = summary.select("origin", lag.alias("x")).where(
        (F.col("x.region") != F.col("origin")) & F.col("x.value").isNotNull()
    )
    return (
        rows.select(
            (F.col("origin") * F.lit(len(regions)) + F.col("x.region")).alias("pair"),
            F.col("x.value").alias("lag_seconds"),
        )
        .groupBy("pair", "lag_seconds")
        .agg(F.count(F.lit(1)).alias("messages"))
    )


def pair_name(pair: int, regions: RegionIndex) -> str:
    """``"SRC->DST"`` of a ``lags`` pair number."""
    source, target = divmod(pair, len(regions))
    return f"{regions.names[source]}->{regions.names[target]}"


@dataclass(frozen=True)
class LagFigures:
    """What one aggregation of the lag rows per region pair yields."""

    summary: dict[str, dict[str, float | int]]
    """Per pair name: count, exact p50/p95/p99 and max in seconds (``lag_seconds``)."""
    ranges: dict[int, tuple[float, float]]
    """Per pair number: the smallest and largest lag, unrounded (the histograms' bounds)."""
    clock_skew_suspects: int
    """Replicas enqueued before their origin copy by more than the watermark."""


def lag_figures(lag_rows: DataFrame, regions: RegionIndex, watermark_seconds: float) -> LagFigures:
    """Summary, range and clock skew suspects of every region pair's lags (``lags`` rows)."""
    rows = (
        lag_rows.groupBy("pair")
        .agg(
            F.sum("messages").alias("count"),
            F.percentile(
                "lag_seconds", F.array(F.lit(0.5), F.lit(0.95), F.lit(0.99)), F.col("messages")
            ).alias("p"),
            F.min("lag_seconds").alias("min"),
            F.max("lag_seconds").alias("max"),
            F.sum(F.when(F.col("lag_seconds") < -watermark_seconds, F.col("messages"))).alias(
                "skewed"
            ),
        )
        .collect()
    )
    summary = {
        pair_name(int(row["pair"]), regions): {
            "count": int(row["count"]),
            "p50": round(float(row["p"][0]), 3),
            "p95": round(float(row["p"][1]), 3),
            "p99": round(float(row["p"][2]), 3),
            "max": round(float(row["max"]), 3),
        }
        for row in rows
    }
    ranges = {int(row["pair"]): (float(row["min"]), float(row["max"])) for row in rows}
    skewed = sum(int(row["skewed"] or 0) for row in rows)
    return LagFigures(dict(sorted(summary.items())), ranges, skewed)


def lag_histograms(
    lag_rows: DataFrame,
    regions: RegionIndex,
    ranges: dict[int, tuple[float, float]],
    bins: int = 20,
) -> dict[str, dict[str, Any]]:
    """Per pair name: ``bins`` equal-width lag buckets between the pair's ``ranges``."""
    if not ranges:
        return {}
    low = F.when(F.lit(False), F.lit(None))
    width = F.when(F.lit(False), F.lit(None))
    for pair, (lo, hi) in ranges.items():
        low = low.when(F.col("pair") == pair, F.lit(lo))
        width = width.when(F.col("pair") == pair, F.lit(max((hi - lo) / bins, 1e-9)))
    bucket = F.least(F.floor((F.col("lag_seconds") - low) / width), F.lit(bins - 1))
    rows = (
        lag_rows.groupBy("pair", bucket.alias("bucket"))
        .agg(F.sum("messages").alias("messages"))
        .collect()
    )
    histograms: dict[int, dict[str, Any]] = {
        pair: {"lo": lo, "hi": hi, "counts": [0] * bins} for pair, (lo, hi) in ranges.items()
    }
    for row in rows:
        histograms[int(row["pair"])]["counts"][int(row["bucket"])] = int(row["messages"])
    return dict(sorted((pair_name(pair, regions), h) for pair, h in histograms.items()))


def timeline(
    summary: DataFrame, regions: RegionIndex, figures: dict[str, Any], buckets: int = 60
) -> dict[str, Any]:
    """Messages per region per time bucket (by their first copy there), for the chart."""
    lows = [figures[f"lo{i}"] for i in range(len(regions)) if figures[f"lo{i}"] is not None]
    highs = [figures[f"hi{i}"] for i in range(len(regions)) if figures[f"hi{i}"] is not None]
    if not lows:
        return {"start": None, "bucket_seconds": 0, "series": {}}
    lo, hi = min(lows), max(highs)
    width = max((hi - lo) // buckets + 1, 1)
    arrivals = _per_region(regions, lambda i: F.col(f"t{i}"))
    points = summary.select(arrivals.alias("x")).where(F.col("x.value").isNotNull())
    bucket = F.least(F.floor((F.col("x.value") - F.lit(lo)) / F.lit(width)), F.lit(buckets - 1))
    rows = points.groupBy(F.col("x.region").alias("region"), bucket.alias("bucket")).count()
    series: dict[str, list[int]] = {}
    for row in rows.collect():
        name = regions.names[int(row["region"])]
        series.setdefault(name, [0] * buckets)[int(row["bucket"])] = int(row["count"])
    start = datetime.fromtimestamp(lo / 1e6, UTC).isoformat()
    return {"start": start, "bucket_seconds": width / 1e6, "series": series}


def _per_region(regions: RegionIndex, value: Callable[[int], Column]) -> Column:
    """Explodes a summary row into one row per region number i: ``region`` and ``value(i)``."""
    return F.explode(
        F.array(
            *[
                F.struct(F.lit(i).alias("region"), value(i).alias("value"))
                for i in range(len(regions))
            ]
        )
    )


def unique_rows(summary: DataFrame, regions: RegionIndex) -> DataFrame:
    """``unique/``: every message's first copy and what the audit found about the message.

    Columns: ``message_id``, ``region``, ``enqueued_time_utc``, ``sequence_number`` (of the first
    copy), ``copies`` (in all regions), ``origin`` (null when outside the audit) and ``loop``.
    """
    return summary.select(
        MESSAGE_ID,
        regions.name(F.col("first_r")).alias(REGION),
        F.timestamp_micros("first_t").alias(ENQUEUED),
        F.col("first_sequence").alias(SEQUENCE),
        "copies",
        regions.name(F.col("origin")).alias("origin"),
        "loop",
    )


def duplicate_copies(
    copies: DataFrame,
    summary: DataFrame,
    regions: RegionIndex,
    watermark_seconds: float,
    *,
    hash_join: bool = True,
) -> DataFrame:
    """``duplicates/``: every copy but the first, from ``copy_keys`` rows.

    Columns: the copy (``message_id``, ``region``, ``enqueued_time_utc``, ``sequence_number``),
    its message's ``first_region`` and ``first_enqueued_time_utc``, and whether it is ``late``
    (more than the watermark after the first copy).

    With ``hash_join`` each partition of ``summary`` is held in a hash table (no sort of the
    copies); without, Spark plans its own join (a sort-merge join that can spill to disk).
    """
    firsts = summary.select(MESSAGE_ID, "first_t", "first_r", "first_copy")
    joined = copies.join(firsts.hint("shuffle_hash") if hash_join else firsts, MESSAGE_ID)
    late = (F.col("t") - F.col("first_t")) > F.lit(watermark_seconds * 1e6)
    return joined.where(F.col("copy_id") != F.col("first_copy")).select(
        MESSAGE_ID,
        regions.name(F.col("r")).alias(REGION),
        F.timestamp_micros("t").alias(ENQUEUED),
        SEQUENCE,
        regions.name(F.col("first_r")).alias("first_region"),
        F.timestamp_micros("first_t").alias("first_enqueued_time_utc"),
        late.alias("late"),
    )


def unique_messages(records: DataFrame) -> DataFrame:
    """One row per message id: its first copy (``unique/`` columns without the audit's facts
    but ``copies``), by a sort-based aggregation.

    For the streaming mode's output, which is small and lacks the batch audit's keys.
    """
    first = F.min(F.struct(ENQUEUED, REGION, SEQUENCE)).alias("first")
    return (
        records.groupBy(MESSAGE_ID)
        .agg(first, F.count(F.lit(1)).alias("copies"))
        .select(
            MESSAGE_ID,
            *[F.col("first").getField(c).alias(c) for c in (REGION, ENQUEUED, SEQUENCE)],
            "copies",
        )
    )

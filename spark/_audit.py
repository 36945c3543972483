"""The audit itself: pure DataFrame -> DataFrame functions over normalized records.

Definitions (they are the report's keys; see spark/README.md):

- a *copy* is one record, in one region; the *first copy* of a message is its earliest copy by
  enqueue time (ties: region name, then sequence number, a missing one first), which is what
  ``unique/`` keeps;
- the *origin* of a message is its ``repl-origin`` property, or else the region of its earliest
  copy without ``repl-origin`` (the copy an application published);
- the *lag* of a message in region R is R's first copy's enqueue time minus the origin's first
  copy's enqueue time;
- a *loop* is a message whose ``repl-path`` names a namespace twice or whose ``repl-hops``
  exceeds the number of regions - 1;
- a *late record* is a duplicate copy enqueued more than the watermark after the message's
  first copy: streaming deduplication within the watermark cannot recognize it.

How it stays fast: every figure is derived from one row per message (``message_summary``), an
aggregation whose results are all fixed-width numbers (counts, minimums and one packed ordering
key instead of a struct), which Spark runs as a hash aggregation rather than sorting every copy;
copies are then matched with their message's first copy by one hash join (``classify_copies``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from replication.properties import REPL_HOPS, REPL_ORIGIN, REPL_PATH, SEPARATOR

from ._schema import ENQUEUED, MESSAGE_ID, PROPERTIES, REGION, SEQUENCE

_DECIMAL = "decimal(38,0)"
_LONG_MIN = -(2**63)
# A copy's ordering key packs (enqueue time in µs, region number, sequence number) into one
# decimal: (time * regions + region) * _SEQUENCE_SPAN + sequence slot. The slot is 0 for a
# missing sequence number and sequence - Long.MIN + 1 otherwise, so it fits [0, 2**64].
_SEQUENCE_SPAN = 2**64 + 1

KIND = "kind"
"""Column of ``classify_copies``: ``unique`` for a message's first copy, else ``duplicates``."""

UNIQUE, DUPLICATES = "unique", "duplicates"


@dataclass(frozen=True)
class RegionIndex:
    """The audited regions numbered in name order, so that numbers order copies like names do."""

    names: tuple[str, ...]

    @classmethod
    def of(cls, regions: Iterable[str]) -> RegionIndex:
        return cls(tuple(sorted(set(regions))))

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


def copy_keys(records: DataFrame, regions: RegionIndex) -> DataFrame:
    """Valid records with the numbers the audit works on.

    ``t``: enqueue time in µs; ``r``: region number; ``rank``: the packed ordering key (smallest
    = first copy); ``o``: number of the declared ``repl-origin`` (null without one);
    ``looped``: 1 when this copy's path or hop count shows a loop.
    """
    micros = F.unix_micros(ENQUEUED)
    number = regions.number(F.col(REGION))
    sequence_slot = F.coalesce(
        F.col(SEQUENCE).cast(_DECIMAL) - F.lit(_LONG_MIN).cast(_DECIMAL) + F.lit(1),
        F.lit(0).cast(_DECIMAL),
    )
    rank = (micros * F.lit(len(regions)) + number).cast(_DECIMAL) * _decimal(
        _SEQUENCE_SPAN
    ) + sequence_slot
    path = F.array_remove(
        F.split(F.coalesce(F.col(PROPERTIES).getItem(REPL_PATH), F.lit("")), SEPARATOR), ""
    )
    repeats = F.size(F.array_distinct(path)) < F.size(path)
    hops = F.col(PROPERTIES).getItem(REPL_HOPS).try_cast("long")  # malformed: no verdict
    too_many = F.coalesce(hops > F.lit(max(len(regions) - 1, 0)), F.lit(False))
    return records.where(is_valid()).select(
        REGION,
        MESSAGE_ID,
        ENQUEUED,
        PROPERTIES,
        SEQUENCE,
        micros.alias("t"),
        number.alias("r"),
        rank.alias("rank"),
        regions.number(F.col(PROPERTIES).getItem(REPL_ORIGIN), others=regions.elsewhere).alias("o"),
        (repeats | too_many).cast("int").alias("looped"),
    )


def message_summary(copies: DataFrame, regions: RegionIndex) -> DataFrame:
    """One row per message id from ``copy_keys`` rows: everything the report needs.

    ``copies``; ``loop``; ``first_t`` / ``first_r`` / ``first_sequence`` of the first copy;
    ``origin`` (region number, ``regions.elsewhere`` for an origin outside the audit) and
    ``origin_t``; per region number i: ``n{i}`` copies there and ``t{i}`` the first one's time.
    """
    span = _decimal(_SEQUENCE_SPAN)
    per_region = []
    for index in range(len(regions)):
        here = F.col("r") == index
        per_region += [
            F.count(F.when(here, 1)).alias(f"n{index}"),
            F.min(F.when(here, F.col("t"))).alias(f"t{index}"),
        ]
    grouped = copies.groupBy(MESSAGE_ID).agg(
        F.count(F.lit(1)).alias("copies"),
        F.min("t").alias("first_t"),
        F.min("rank").alias("first_rank"),
        F.max("o").alias("declared_origin"),
        F.min(F.when(F.col("o").isNull(), F.col("rank"))).alias("published_rank"),
        F.max("looped").alias("loop"),
        *per_region,
    )

    def region_of(rank: str) -> Column:
        return F.pmod(F.floor(F.col(rank) / span), F.lit(len(regions))).cast("int")

    slot = F.pmod(F.col("first_rank"), span)
    first_sequence = F.when(slot > 0, slot + _decimal(_LONG_MIN - 1)).cast("long")
    origin = F.coalesce(F.col("declared_origin"), region_of("published_rank"))
    times = [F.col(f"t{index}") for index in range(len(regions))]
    return grouped.select(
        MESSAGE_ID,
        "copies",
        (F.col("loop") > 0).alias("loop"),
        "first_t",
        region_of("first_rank").alias("first_r"),
        first_sequence.alias("first_sequence"),
        origin.alias("origin"),
        regions.pick(origin, times).alias("origin_t"),
        *[F.col(f"{c}{index}") for index in range(len(regions)) for c in ("n", "t")],
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
    """One row per message and non-origin region holding it: ``pair`` and ``lag_seconds``."""
    per_target = F.explode(
        F.array(
            *[
                F.struct(
                    F.lit(index).alias("target"),
                    ((F.col(f"t{index}") - F.col("origin_t")) / F.lit(1e6)).alias("lag"),
                )
                for index in range(len(regions))
            ]
        )
    )
    rows = summary.select("origin", per_target.alias("x")).where(
        (F.col("x.target") != F.col("origin")) & F.col("x.lag").isNotNull()
    )
    return rows.select(
        F.concat(regions.name(F.col("origin")), F.lit("->"), regions.name(F.col("x.target"))).alias(
            "pair"
        ),
        F.col("x.lag").alias("lag_seconds"),
    )


@dataclass(frozen=True)
class LagFigures:
    """What one aggregation of the lag rows per region pair yields."""

    summary: dict[str, dict[str, float | int]]
    """Per pair: count, exact p50/p95/p99 and max in seconds (report.json's ``lag_seconds``)."""
    ranges: dict[str, tuple[float, float]]
    """Per pair: the smallest and largest lag, unrounded (the histograms' bounds)."""
    clock_skew_suspects: int
    """Replicas enqueued before their origin copy by more than the watermark."""


def lag_figures(lag_rows: DataFrame, watermark_seconds: float) -> LagFigures:
    """Summary, range and clock skew suspects of every region pair's lags, in one pass."""
    rows = sorted(
        lag_rows.groupBy("pair")
        .agg(
            F.count(F.lit(1)).alias("count"),
            F.percentile("lag_seconds", F.array(F.lit(0.5), F.lit(0.95), F.lit(0.99))).alias("p"),
            F.min("lag_seconds").alias("min"),
            F.max("lag_seconds").alias("max"),
            F.count(F.when(F.col("lag_seconds") < -watermark_seconds, 1)).alias("skewed"),
        )
        .collect(),
        key=lambda row: row["pair"],
    )
    summary = {
        row["pair"]: {
            "count": int(row["count"]),
            "p50": round(float(row["p"][0]), 3),
            "p95": round(float(row["p"][1]), 3),
            "p99": round(float(row["p"][2]), 3),
            "max": round(float(row["max"]), 3),
        }
        for row in rows
    }
    ranges = {row["pair"]: (float(row["min"]), float(row["max"])) for row in rows}
    return LagFigures(summary, ranges, sum(int(row["skewed"]) for row in rows))


def lag_histograms(
    lag_rows: DataFrame, ranges: dict[str, tuple[float, float]], bins: int = 20
) -> dict[str, dict[str, Any]]:
    """Per pair: ``bins`` equal-width lag buckets between the pair's ``ranges`` (min, max)."""
    if not ranges:
        return {}
    low = F.when(F.lit(False), F.lit(None))
    width = F.when(F.lit(False), F.lit(None))
    for pair, (lo, hi) in ranges.items():
        low = low.when(F.col("pair") == pair, F.lit(lo))
        width = width.when(F.col("pair") == pair, F.lit(max((hi - lo) / bins, 1e-9)))
    bucket = F.least(F.floor((F.col("lag_seconds") - low) / width), F.lit(bins - 1))
    rows = lag_rows.groupBy("pair", bucket.alias("bucket")).count().collect()
    histograms: dict[str, dict[str, Any]] = {
        pair: {"lo": lo, "hi": hi, "counts": [0] * bins} for pair, (lo, hi) in ranges.items()
    }
    for row in rows:
        histograms[row["pair"]]["counts"][int(row["bucket"])] = int(row["count"])
    return dict(sorted(histograms.items()))


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
    arrivals = F.explode(
        F.array(
            *[
                F.struct(F.lit(i).alias("region"), F.col(f"t{i}").alias("t"))
                for i in range(len(regions))
            ]
        )
    )
    points = summary.select(arrivals.alias("x")).where(F.col("x.t").isNotNull())
    bucket = F.least(F.floor((F.col("x.t") - F.lit(lo)) / F.lit(width)), F.lit(buckets - 1))
    rows = points.groupBy(F.col("x.region").alias("region"), bucket.alias("bucket")).count()
    series: dict[str, list[int]] = {}
    for row in rows.collect():
        name = regions.names[int(row["region"])]
        series.setdefault(name, [0] * buckets)[int(row["bucket"])] = int(row["count"])
    start = datetime.fromtimestamp(lo / 1e6, UTC).isoformat()
    return {"start": start, "bucket_seconds": width / 1e6, "series": series}


def classify_copies(
    copies: DataFrame,
    summary: DataFrame,
    regions: RegionIndex,
    watermark_seconds: float,
    *,
    hash_join: bool = True,
) -> DataFrame:
    """Every copy with its message's facts and ``kind``: the first copy or a duplicate.

    Columns: the copy (``region``, ``message_id``, ``enqueued_time_utc``, ``properties``,
    ``sequence_number``), its message's ``first_region``, ``first_enqueued_time_utc``,
    ``copies``, ``origin`` (null when outside the audit) and ``loop``, whether the copy is
    ``late`` (more than the watermark after the first copy), and ``kind``.

    With ``hash_join`` each partition of ``summary`` is held in a hash table (no sort of the
    copies); without, Spark plans its own join (a sort-merge join that can spill to disk).
    """
    facts = summary.select(
        MESSAGE_ID, "copies", "loop", "first_t", "first_r", "first_sequence", "origin"
    )
    joined = copies.join(facts.hint("shuffle_hash") if hash_join else facts, MESSAGE_ID)
    is_first = (
        (F.col("t") == F.col("first_t"))
        & (F.col("r") == F.col("first_r"))
        & F.col(SEQUENCE).eqNullSafe(F.col("first_sequence"))
    )
    late = (F.col("t") - F.col("first_t")) > F.lit(watermark_seconds * 1e6)
    return joined.select(
        MESSAGE_ID,
        REGION,
        ENQUEUED,
        SEQUENCE,
        PROPERTIES,
        regions.name(F.col("first_r")).alias("first_region"),
        F.timestamp_micros("first_t").alias("first_enqueued_time_utc"),
        "copies",
        regions.name(F.col("origin")).alias("origin"),
        "loop",
        late.alias("late"),
        F.when(is_first, F.lit(UNIQUE)).otherwise(F.lit(DUPLICATES)).alias(KIND),
    )


def unique_messages(records: DataFrame) -> DataFrame:
    """One row per message id: its first copy, by a sort-based aggregation.

    For the streaming mode's output, which is small and lacks the batch audit's keys.
    """
    order = F.struct(ENQUEUED, REGION, SEQUENCE)
    first = F.min_by(F.struct(ENQUEUED, REGION, SEQUENCE, PROPERTIES), order).alias("first")
    return (
        records.groupBy(MESSAGE_ID)
        .agg(first, F.count(F.lit(1)).alias("copies"))
        .select(
            MESSAGE_ID,
            *[F.col("first").getField(c).alias(c) for c in (REGION, ENQUEUED, SEQUENCE)],
            F.col("first").getField(PROPERTIES).alias(PROPERTIES),
            "copies",
        )
    )


def _decimal(value: int) -> Column:
    return F.lit(str(value)).cast(_DECIMAL)

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
- an *expected replica* is a message's first copy in a region the topology sends it to (every
  region but the origin without ``--expect``; with it, the origin's ``SRC:DST`` targets);
- an *unexpected duplicate* is a copy nobody should see: a second copy in one region (an
  in-region duplicate), or a first copy in a region that is neither the message's origin nor
  a region the topology sends it to. Replicas are not duplicates: a healthy 3-region mesh holds
  three copies of each message, one original and two expected replicas;
- a *late record* is a duplicate copy enqueued more than the watermark after the message's
  first copy.

How it stays fast: copies are reduced to a few 64-bit numbers as they are read (a copy's
ordering key ``time_µs * regions + region``, its sequence number, the declared origin and a loop
flag; the properties map is not carried further) and shuffled once, by message id, into one
summary row per message (``message_summary``): per region the copy count, the first copy's key
and its sequence number. The aggregation's results are all fixed-width numbers, so Spark runs it
as a hash aggregation instead of sorting every copy. Everything else comes from that summary:
``unique/``, every figure, the charts, the missing and looping ids, and the duplicates of every
message with at most one copy per region. Only messages with two copies in one region (an
in-region duplicate) need their copies again (``flagged_copies``), and only their copies are
kept from a second read of the input.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F

from replication.properties import REPL_HOPS, REPL_ORIGIN, REPL_PATH, SEPARATOR

from ._schema import ENQUEUED, MESSAGE_ID, PROPERTIES, REGION, SEQUENCE

MAX_REGIONS = 36
"""A copy's ordering key is ``time_µs * regions + region``; with at most 36 regions it fits a
64-bit integer for every timestamp Spark can hold (up to 9999-12-31)."""

MICROS = 1_000_000


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
    def numbers(self) -> range:
        return range(len(self.names))

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
    # != "" rather than length(...) > 0: length counts characters, walking every id's bytes.
    return F.col(MESSAGE_ID).isNotNull() & (F.col(MESSAGE_ID) != "") & F.col(ENQUEUED).isNotNull()


# ---------------------------------------------------------------- copies -> one row per message


def copy_times(records: DataFrame, regions: RegionIndex) -> DataFrame:
    """Valid records as ``message_id``, ``key`` (``time_µs * regions + region``) and
    ``sequence_number``: what a copy is, without what the audit reads from its properties."""
    key = F.unix_micros(ENQUEUED) * F.lit(len(regions)) + regions.number(F.col(REGION))
    return records.where(is_valid()).select(MESSAGE_ID, key.alias("key"), SEQUENCE)


def copy_keys(
    records: DataFrame, regions: RegionIndex, invalid: Observation | None = None
) -> DataFrame:
    """``copy_times`` and what the properties say: ``o``, the number of the declared
    ``repl-origin`` (null without one), and ``looped``, 1 when the copy's path or hop count shows
    a loop.

    With ``invalid``, it observes the metric ``invalid``: the records without message id or
    enqueue time, which are left out. It counts them after the properties are looked up, on
    narrow rows: Spark evaluates observed metrics row by row outside its generated code, and
    observing the records themselves copied every properties map into a row of its own (about
    a fifth of this step's CPU at 1M messages).
    """
    # element_at, unlike properties[...], is no "cheap" expression to Spark's optimizer, so each
    # property is looked up once here instead of once per use in the loop check.
    looked_up = records.select(
        MESSAGE_ID,
        ENQUEUED,
        REGION,
        SEQUENCE,
        *[
            F.try_element_at(PROPERTIES, F.lit(name)).alias(column)
            for name, column in (
                (REPL_ORIGIN, "_origin"),
                (REPL_PATH, "_path"),
                (REPL_HOPS, "_hops"),
            )
        ],
    )
    if invalid is not None:
        looked_up = looked_up.observe(invalid, F.count(F.when(~is_valid(), 1)).alias("invalid"))
    looked_up = looked_up.where(is_valid())
    key = F.unix_micros(ENQUEUED) * F.lit(len(regions)) + regions.number(F.col(REGION))
    return looked_up.select(
        MESSAGE_ID,
        key.alias("key"),
        SEQUENCE,
        regions.number(F.col("_origin"), others=regions.elsewhere).alias("o"),
        loop_flag("_path", "_hops", len(regions)).alias("looped"),
    )


def loop_flag(path_column: str, hops_column: str, region_count: int) -> Column:
    """1 when the path in ``path_column`` names a namespace twice or the hop count in
    ``hops_column`` exceeds regions - 1, else 0 (a malformed hop count gives no verdict)."""
    path = F.col(path_column)
    first_separator = F.instr(path, SEPARATOR)
    # Most paths have one or two entries: compare those as strings, without building arrays.
    second_separator = F.expr(
        f"locate('{SEPARATOR}', {path_column}, instr({path_column}, '{SEPARATOR}') + 1)"
    )
    head, tail = F.substring_index(path, SEPARATOR, 1), F.substring_index(path, SEPARATOR, -1)
    entries = F.array_remove(F.split(path, SEPARATOR), "")
    repeats = (
        F.when(first_separator == 0, F.lit(False))
        .when(second_separator == 0, (head == tail) & (F.length(head) > 0))
        .otherwise(F.size(F.array_distinct(entries)) < F.size(entries))
    )
    hops = F.col(hops_column).try_cast("long")
    too_many = F.coalesce(hops > F.lit(max(region_count - 1, 0)), F.lit(False))
    return (F.coalesce(repeats, F.lit(False)) | too_many).cast("int")


def message_summary(copies: DataFrame, regions: RegionIndex) -> DataFrame:
    """One row per message id from ``copy_keys`` rows: everything the audit needs.

    ``loop``; ``origin`` (region number, ``regions.elsewhere`` for an origin outside the audit);
    per region number i: ``n{i}`` copies there, ``k{i}`` the ordering key of the first of them
    (null without one) and ``s{i}`` its sequence number; when the region holds two copies
    enqueued at different times, ``x{i}`` and ``y{i}``, the key and sequence number of the other
    one; ``listed``, whether these columns list every copy of the message (false with three
    copies in one region, or two enqueued in the same microsecond). Derived columns: ``Summary``.

    Among copies with equal keys (one region, the same microsecond) the first is whichever
    Spark meets first; ``k{i}`` and ``s{i}`` come from that same copy, as ``min`` and
    ``min_by`` share the ordering and its updates.
    """
    count = len(regions)
    region = F.pmod(F.col("key"), F.lit(count))
    per_region = []
    for index in regions.numbers:
        here = F.when(region == index, F.col("key"))
        per_region += [
            F.count(here).alias(f"n{index}"),
            F.min(here).alias(f"k{index}"),
            F.min_by(SEQUENCE, here).alias(f"s{index}"),
            F.max(here).alias(f"last_key{index}"),
            F.max_by(SEQUENCE, here).alias(f"last_sequence{index}"),
        ]
    grouped = copies.groupBy(MESSAGE_ID).agg(
        F.max("o").alias("declared_origin"),
        F.min(F.when(F.col("o").isNull(), F.col("key"))).alias("published_key"),
        F.max("looped").alias("loop"),
        *per_region,
    )
    origin = F.coalesce(
        F.col("declared_origin"), F.pmod(F.col("published_key"), F.lit(count)).cast("int")
    )
    columns = []
    listed = F.lit(True)
    for index in regions.numbers:
        copies_here, first, last = F.col(f"n{index}"), F.col(f"k{index}"), F.col(f"last_key{index}")
        second = (copies_here == 2) & (last != first)
        columns += [
            copies_here,
            first,
            F.col(f"s{index}"),
            F.when(second, last).alias(f"x{index}"),
            F.when(second, F.col(f"last_sequence{index}")).alias(f"y{index}"),
        ]
        listed = listed & ((copies_here <= 1) | second)
    return grouped.select(
        MESSAGE_ID,
        (F.col("loop") > 0).alias("loop"),
        origin.alias("origin"),
        listed.alias("listed"),
        *columns,
    )


def _div(dividend: Column, divisor: int) -> Column:
    """Integer division (exact, unlike a division of doubles, for keys above 2**53)."""
    return F.call_function("div", dividend, F.lit(divisor))


@dataclass(frozen=True)
class Summary:
    """Columns derived from a ``message_summary`` row (cheap to compute where they are used)."""

    regions: RegionIndex

    def time(self, index: int) -> Column:
        """The enqueue time in µs of region ``index``'s first copy (null: none there)."""
        return _div(F.col(f"k{index}") - F.lit(index), len(self.regions))

    def time_of(self, key: Column) -> Column:
        """The enqueue time in µs of a copy with ordering ``key`` (exact for any sign)."""
        return _div(key - F.pmod(key, F.lit(len(self.regions))), len(self.regions))

    @property
    def first_key(self) -> Column:
        keys = [F.col(f"k{index}") for index in self.regions.numbers]
        # least() takes two columns or more: an audit of one region has one key.
        return F.least(*keys) if len(keys) > 1 else keys[0]

    @property
    def first_region(self) -> Column:
        return F.pmod(self.first_key, F.lit(len(self.regions))).cast("int")

    @property
    def first_time(self) -> Column:
        return self.time_of(self.first_key)

    @property
    def first_sequence(self) -> Column:
        return self.regions.pick(
            self.first_region, [F.col(f"s{index}") for index in self.regions.numbers]
        )

    @property
    def copies(self) -> Column:
        return sum((F.col(f"n{index}") for index in self.regions.numbers[1:]), F.col("n0"))

    @property
    def origin_time(self) -> Column:
        return self.regions.pick(
            F.col("origin"), [self.time(index) for index in self.regions.numbers]
        )

    def lag(self, index: int) -> Column:
        """Seconds from the origin's first copy to region ``index``'s (null in the origin)."""
        return F.when(
            F.col("origin") != index, (self.time(index) - self.origin_time) / F.lit(float(MICROS))
        )

    def replica_expected(self, index: int, expect: list[tuple[str, str]]) -> Column:
        """Whether the topology sends the message a copy in region ``index``: not its origin,
        and (with ``expect``) a target of its origin; without ``expect`` (all-active) every
        other region is."""
        elsewhere = F.col("origin") != index
        if not expect:
            return elsewhere
        target = self.regions.names[index]
        sources = [self.regions.names.index(s) for s, t in expect if t == target]
        return elsewhere & F.col("origin").isin(sources) if sources else F.lit(False)

    def first_time_in(self, since_us: int | None, until_us: int | None) -> Column:
        """Whether the message's first copy was enqueued in ``[since_us, until_us)`` (µs)."""
        inside = F.lit(True)
        if since_us is not None:
            inside = inside & (self.first_time >= F.lit(since_us))
        if until_us is not None:
            inside = inside & (self.first_time < F.lit(until_us))
        return inside

    def unexpected_region(self, index: int, expect: list[tuple[str, str]]) -> Column:
        """Whether region ``index`` holds the message though it is neither the message's origin
        nor a region the topology sends it to: its first copy there is an unexpected
        duplicate."""
        return (
            (F.col(f"n{index}") > 0)
            & (F.col("origin") != index)
            & ~self.replica_expected(index, expect)
        )

    def late(
        self, key: Column, watermark_seconds: float, first_key: Column | None = None
    ) -> Column:
        """Whether the copy with ordering ``key`` was enqueued more than the watermark after the
        message's first copy, whose key is ``first_key`` (default: the summary row's); null
        when ``key`` is."""
        first = self.first_time if first_key is None else self.time_of(first_key)
        return (self.time_of(key) - first) > F.lit(watermark_seconds * MICROS)

    def missing(self, index: int, expect: list[tuple[str, str]]) -> Column:
        """Whether the message should be in region ``index`` and is not.

        With ``expect`` (SRC, DST) pairs, a message originating in SRC must be in DST; without,
        every region must hold every message (all-active).
        """
        absent = F.col(f"n{index}") == 0
        if not expect:
            return absent
        target = self.regions.names[index]
        sources = [self.regions.names.index(s) for s, t in expect if t == target]
        if not sources:
            return F.lit(False)
        return absent & F.col("origin").isin(sources)


# ---------------------------------------------------------------- figures


def figure_columns(
    regions: RegionIndex, expect: list[tuple[str, str]], watermark_seconds: float
) -> list[Column]:
    """Aggregates over ``message_summary`` rows that make the report's totals (one pass, e.g. as
    ``DataFrame.observe`` metrics of writing ``unique/``; ``Figures`` reads them).

    ``late{i}`` counts the late copies the summary lists in region i: its first copy there, and
    the second one of a message whose copies are all listed (``unlisted_copies`` counts the
    others')."""
    derived = Summary(regions)
    columns = [
        F.count(F.lit(1)).alias("unique"),
        F.count(F.when(F.col("loop"), 1)).alias("loops"),
        F.count(F.when(~F.col("listed"), 1)).alias("unlisted"),
    ]
    for index in regions.numbers:
        held = F.col(f"n{index}") > 0
        late_first = derived.late(F.col(f"k{index}"), watermark_seconds)
        late_second = F.col("listed") & derived.late(F.col(f"x{index}"), watermark_seconds)
        columns += [
            F.coalesce(F.sum(f"n{index}"), F.lit(0)).alias(f"records{index}"),
            F.count(F.when(held, 1)).alias(f"held{index}"),
            F.count(F.when(derived.missing(index, expect), 1)).alias(f"missing{index}"),
            F.count(F.when(held & derived.replica_expected(index, expect), 1)).alias(
                f"expected{index}"
            ),
            F.count(F.when(derived.unexpected_region(index, expect), 1)).alias(f"stranger{index}"),
            (F.count(F.when(late_first, 1)) + F.count(F.when(late_second, 1))).alias(
                f"late{index}"
            ),
            F.min(f"k{index}").alias(f"first{index}"),
            F.max(f"k{index}").alias(f"last{index}"),
        ]
    return columns


@dataclass(frozen=True)
class Figures:
    """The totals of ``figure_columns``, read from their values (a row as a dict)."""

    values: dict[str, Any]
    regions: RegionIndex

    def __getitem__(self, name: str) -> int:
        return int(self.values[name])

    @property
    def total(self) -> int:
        return sum(self[f"records{index}"] for index in self.regions.numbers)

    @property
    def late(self) -> int:
        """Late copies the summary lists (``figure_columns``)."""
        return sum(self[f"late{index}"] for index in self.regions.numbers)

    @property
    def time_range(self) -> tuple[int, int] | None:
        """The earliest and latest first copy in any region, in µs (None: no copies)."""
        count = len(self.regions)
        firsts = [self.values[f"first{i}"] for i in self.regions.numbers]
        lasts = [self.values[f"last{i}"] for i in self.regions.numbers]
        if all(key is None for key in firsts):
            return None
        return (
            min(key // count for key in firsts if key is not None),
            max(key // count for key in lasts if key is not None),
        )

    def region_report(self, repeats: Sequence[int] | None = None) -> dict[str, dict[str, int]]:
        """Per region: records, distinct messages, expected replicas, capture repeats (one copy
        read more than once: same enqueue time, same sequence number; ``repeats`` per region
        number, from ``unlisted_copies``), in-region duplicates (the other second copies),
        unexpected duplicates (in-region duplicates and copies the topology does not send
        there) and missing messages."""
        report = {}
        for index, region in enumerate(self.regions.names):
            records, held = self[f"records{index}"], self[f"held{index}"]
            repeated = repeats[index] if repeats else 0
            in_region = records - held - repeated
            report[region] = {
                "records": records,
                "unique_messages": held,
                "expected_replicas": self[f"expected{index}"],
                "capture_repeats": repeated,
                "in_region_duplicates": in_region,
                "unexpected_duplicates": in_region + self[f"stranger{index}"],
                "missing": self[f"missing{index}"],
            }
        return report


def pair_name(pair: int, regions: RegionIndex) -> str:
    """``"SRC->DST"`` of a pair number ``source * regions + target``."""
    source, target = divmod(pair, len(regions))
    return f"{regions.names[source]}->{regions.names[target]}"


# ---------------------------------------------------------------- distributions


LAG_BINS_PER_DECADE = 5
"""Lag histograms use one logarithmic axis for every region pair: 5 bins per power of ten."""
SMALLEST_LAG_BIN = -3 * LAG_BINS_PER_DECADE
"""Lags from 0 up to 1.58 ms share the first bin; negative lags (clock skew) have their own."""
NEGATIVE_LAG_BIN = SMALLEST_LAG_BIN - 1


def lag_bin_bounds(index: int) -> tuple[float, float]:
    """The seconds a lag histogram bin covers (bin ``NEGATIVE_LAG_BIN``: all negative lags)."""
    if index == NEGATIVE_LAG_BIN:
        return (-math.inf, 0.0)
    low = 0.0 if index == SMALLEST_LAG_BIN else 10 ** (index / LAG_BINS_PER_DECADE)
    return (low, 10 ** ((index + 1) / LAG_BINS_PER_DECADE))


def _lag_bin(lag: Column) -> Column:
    # 1e-9: powers of ten (0.1 s) land in the bin they start, despite log10's rounding.
    logarithmic = F.floor(F.log10(lag) * F.lit(LAG_BINS_PER_DECADE) + F.lit(1e-9))
    return (
        F.when(lag < 0, F.lit(NEGATIVE_LAG_BIN))
        .otherwise(F.greatest(logarithmic, F.lit(SMALLEST_LAG_BIN)))
        .cast("int")
    )


@dataclass(frozen=True)
class TimeAxis:
    """The timeline's buckets: ``count`` buckets of ``width_us`` µs from ``start_us``."""

    start_us: int
    width_us: int
    count: int

    NICE_WIDTHS_S = (
        0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30,
        60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400,
    )  # fmt: skip

    @classmethod
    def spanning(cls, low_us: int, high_us: int, most: int = 120) -> TimeAxis:
        """At most ``most`` buckets of a round width (1 s, 5 min, ...) aligned to that width."""
        for seconds in cls.NICE_WIDTHS_S:
            width = round(seconds * MICROS)
            start = low_us - low_us % width
            if (high_us - start) // width < most:
                break
        else:
            width = math.ceil((high_us - low_us + 1) / most / (86400 * MICROS)) * 86400 * MICROS
            start = low_us - low_us % width
        return cls(start, width, (high_us - start) // width + 1)


@dataclass(frozen=True)
class Distributions:
    """Lag percentiles, lag histograms and the timeline, from one pass over the summary."""

    lag_summary: dict[str, dict[str, float | int]]
    """Per pair name: count, exact p50/p95/p99 and max of the lag in seconds."""
    lag_histograms: dict[str, dict[int, int]]
    """Per pair name: messages per lag bin (``lag_bin_bounds``), non-empty bins only."""
    timeline: dict[str, list[int]]
    """Per region: messages whose first copy there falls in each ``TimeAxis`` bucket."""
    clock_skew_suspects: int
    """Replicas enqueued before their origin copy by more than the skew tolerance."""


def distributions(
    summary: DataFrame, regions: RegionIndex, axis: TimeAxis | None, skew_seconds: float
) -> Distributions:
    """Every chart's data and the lag percentiles in one Spark action.

    Each summary row becomes a lag row per region holding the message (but its origin) and a
    time row per region holding it; one aggregation counts equal rows. The percentiles are then
    taken over the distinct lags with their counts (Azure enqueue times have millisecond
    resolution, so millions of lags have a few thousand values); the histograms and the
    percentiles read the same aggregation (Spark reuses its shuffle).
    """
    derived = Summary(regions)
    count = len(regions)
    # Lags and buckets first, as columns: each is computed once, not once per use.
    columns = [F.col("origin")] + [
        derived.lag(index).alias(f"lag{index}") for index in regions.numbers
    ]
    if axis is not None:
        columns += [
            F.floor((derived.time(index) - F.lit(axis.start_us)) / F.lit(axis.width_us))
            .cast("long")
            .alias(f"bucket{index}")
            for index in regions.numbers
        ]
    items = []
    for index in regions.numbers:
        items.append(
            F.struct(
                F.lit(0).alias("kind"),
                (F.col("origin") * F.lit(count) + F.lit(index)).cast("long").alias("group"),
                F.lit(None).cast("long").alias("bucket"),
                F.col(f"lag{index}").alias("lag"),
            )
        )
        if axis is not None:
            items.append(
                F.struct(
                    F.lit(1).alias("kind"),
                    F.lit(index).cast("long").alias("group"),
                    F.col(f"bucket{index}").alias("bucket"),
                    F.lit(None).cast("double").alias("lag"),
                )
            )
    rows = (
        summary.select(*columns)
        .select(F.explode(F.array(*items)).alias("x"))
        .select("x.*")
        .where(F.col("lag").isNotNull() | F.col("bucket").isNotNull())
    )
    # Cached (it is small) so that the three readings below aggregate the summary only once.
    counted = (
        rows.groupBy("kind", "group", "bucket", "lag").agg(F.count(F.lit(1)).alias("n")).persist()
    )
    try:
        return _distributions_of(counted, regions, axis, skew_seconds)
    finally:
        counted.unpersist()


def _distributions_of(
    counted: DataFrame, regions: RegionIndex, axis: TimeAxis | None, skew_seconds: float
) -> Distributions:
    lags = counted.where(F.col("kind") == 0)
    percentiles = lags.groupBy("group").agg(
        F.lit("lag").alias("part"),
        F.sum("n").alias("n"),
        F.percentile("lag", F.array(F.lit(0.5), F.lit(0.95), F.lit(0.99)), F.col("n")).alias("p"),
        F.max("lag").alias("max"),
        F.sum(F.when(F.col("lag") < F.lit(-skew_seconds), F.col("n"))).alias("skewed"),
    )
    histograms = lags.groupBy("group", _lag_bin(F.col("lag")).cast("long").alias("bucket")).agg(
        F.lit("histogram").alias("part"), F.sum("n").alias("n")
    )
    timeline = counted.where(F.col("kind") == 1).select(
        F.lit("timeline").alias("part"), "group", "bucket", "n"
    )
    collected = (
        percentiles.unionByName(histograms, allowMissingColumns=True)
        .unionByName(timeline, allowMissingColumns=True)
        .collect()
    )
    lag_summary: dict[str, dict[str, float | int]] = {}
    lag_histograms: dict[str, dict[int, int]] = {}
    series: dict[str, list[int]] = {}
    skewed = 0
    for row in collected:
        if row["part"] == "lag":
            skewed += int(row["skewed"] or 0)
            lag_summary[pair_name(int(row["group"]), regions)] = {
                "count": int(row["n"]),
                "p50": round(float(row["p"][0]), 3),
                "p95": round(float(row["p"][1]), 3),
                "p99": round(float(row["p"][2]), 3),
                "max": round(float(row["max"]), 3),
            }
        elif row["part"] == "histogram":
            bins = lag_histograms.setdefault(pair_name(int(row["group"]), regions), {})
            bins[int(row["bucket"])] = int(row["n"])
        elif axis is not None:
            name = regions.names[int(row["group"])]
            series.setdefault(name, [0] * axis.count)[int(row["bucket"])] = int(row["n"])
    return Distributions(
        dict(sorted(lag_summary.items())),
        {pair: dict(sorted(bins.items())) for pair, bins in sorted(lag_histograms.items())},
        dict(sorted(series.items())),
        skewed,
    )


# ---------------------------------------------------------------- outputs


def unique_rows(summary: DataFrame, regions: RegionIndex) -> DataFrame:
    """``unique/``: every message's first copy and what the audit found about the message.

    Columns: ``message_id``, ``region``, ``enqueued_time_utc``, ``sequence_number`` (of the first
    copy), ``copies`` (in all regions), ``origin`` (null when outside the audit) and ``loop``.
    """
    derived = Summary(regions)
    return summary.select(
        MESSAGE_ID,
        regions.name(derived.first_region).alias(REGION),
        F.timestamp_micros(derived.first_time).alias(ENQUEUED),
        derived.first_sequence.alias(SEQUENCE),
        derived.copies.alias("copies"),
        regions.name(F.col("origin")).alias("origin"),
        "loop",
    )


IN_REGION = "in_region"
"""``duplicates/`` kind: a second copy in one region (another enqueue of the message there)."""
UNEXPECTED_REGION = "unexpected_region"
"""``duplicates/`` kind: the first copy in a region that is neither the message's origin nor a
region the topology sends it to."""
CAPTURE_REPEAT = "capture_repeat"
"""``duplicates/`` kind: a copy read again (same region, enqueue time and sequence number)."""


def _duplicate_columns(regions: RegionIndex, watermark_seconds: float) -> list[Column]:
    """``duplicates/`` columns from rows with ``message_id``, ``key``, ``sequence_number`` and
    ``kind`` of a copy and ``first_key`` of its message's first copy."""
    derived, count = Summary(regions), F.lit(len(regions))
    key, first_key = F.col("key"), F.col("first_key")
    return [
        F.col(MESSAGE_ID),
        regions.name(F.pmod(key, count)).alias(REGION),
        F.timestamp_micros(derived.time_of(key)).alias(ENQUEUED),
        F.col(SEQUENCE),
        F.col("kind"),
        regions.name(F.pmod(first_key, count)).alias("first_region"),
        F.timestamp_micros(derived.time_of(first_key)).alias("first_enqueued_time_utc"),
        derived.late(key, watermark_seconds, first_key).alias("late"),
    ]


def duplicate_copies(
    summary: DataFrame,
    regions: RegionIndex,
    watermark_seconds: float,
    expect: list[tuple[str, str]],
    unlisted: DataFrame | None,
) -> DataFrame:
    """``duplicates/``: every copy nobody should see, one row each, and the copies read twice.

    Columns: the copy (``message_id``, ``region``, ``enqueued_time_utc``, ``sequence_number``),
    its ``kind`` (``IN_REGION``, ``UNEXPECTED_REGION`` or ``CAPTURE_REPEAT``), its message's
    ``first_region`` and ``first_enqueued_time_utc``, and whether it is ``late`` (more than the
    watermark after the first copy). Expected replicas are copies, not duplicates: they are not
    listed (a healthy mesh lists nothing). The rows of each region's kinds add up to the
    report's ``unexpected_duplicates`` and ``capture_repeats``.

    Most messages are described by their summary row (``listed``): their duplicates are their
    first copies in unexpected regions and their second copies; only summary rows with one of
    them are read further. ``unlisted`` (``unlisted_copies``) holds the duplicates of the other
    messages.
    """
    derived = Summary(regions)
    candidates, any_candidate = [], F.lit(False)
    for index in regions.numbers:
        unexpected = derived.unexpected_region(index, expect)
        second = F.col(f"x{index}").isNotNull()
        candidates += [
            F.when(unexpected, _copy(f"k{index}", f"s{index}", UNEXPECTED_REGION)),
            F.when(second, _copy(f"x{index}", f"y{index}", IN_REGION)),
        ]
        any_candidate = any_candidate | unexpected | second
    listed = (
        summary.where(F.col("listed") & any_candidate)
        .select(MESSAGE_ID, derived.first_key.alias("first_key"), F.explode(F.array(*candidates)))
        .where(F.col("col").isNotNull())
        .select(
            MESSAGE_ID,
            "col.key",
            F.col(f"col.{SEQUENCE}").alias(SEQUENCE),
            "col.kind",
            "first_key",
        )
    )
    columns = _duplicate_columns(regions, watermark_seconds)
    if unlisted is None:
        return listed.select(*columns)
    return listed.unionByName(unlisted).select(*columns)


def _copy(key: str, sequence: str, kind: str) -> Column:
    return F.struct(
        F.col(key).alias("key"), F.col(sequence).alias(SEQUENCE), F.lit(kind).alias("kind")
    )


UNLISTED_BROADCAST_LIMIT = 1_000_000
"""Up to this many messages whose copies the summary does not list, their first copies are
broadcast to find their copies in a second read of the input without shuffling it (about 150
bytes each with 3 regions, the first key, sequence number and verdict of each region, in the
driver's memory); above it, the copies are shuffled and joined by id."""


def unlisted_copies(
    records: DataFrame,
    summary: DataFrame,
    regions: RegionIndex,
    watermark_seconds: float,
    expect: list[tuple[str, str]],
    unlisted_messages: int,
    observed: Observation | None = None,
) -> DataFrame:
    """The duplicates (``duplicate_copies``) of the messages whose copies the summary does not
    list (three or more in one region, or two in the same microsecond), as rows with
    ``message_id``, ``key``, ``sequence_number``, ``kind`` and ``first_key``, from a second
    read of the input.

    A region's first copy is the one with the region's first key and its sequence number
    (``k{i}``, ``s{i}``); it is a duplicate only in an unexpected region, every other copy in
    the region is an in-region duplicate. Copies equal in key and sequence number (one region,
    one microsecond, one sequence number) are one copy read more than once, which two enqueues
    of a message never are (a Service Bus capture redelivered a batch it had written,
    ``replication.capture``): all but one are ``CAPTURE_REPEAT`` rows. With ``observed``, it
    observes, once the rows are written, ``repeats{i}``, those repeats per region number i, and
    ``late``, the late copies among the ones that are not a region's first (``figure_columns``
    counts those). Every repeat is here: two copies in one region with one key make their
    message unlisted.
    """
    derived, numbers = Summary(regions), regions.numbers
    firsts = summary.where(~F.col("listed")).select(
        MESSAGE_ID,
        derived.first_key.alias("first_key"),
        *[F.col(f"k{index}") for index in numbers],
        *[F.col(f"s{index}") for index in numbers],
        *[derived.unexpected_region(index, expect).alias(f"u{index}") for index in numbers],
    )
    if unlisted_messages <= UNLISTED_BROADCAST_LIMIT:
        firsts = F.broadcast(firsts)
    joined = copy_times(records, regions).join(firsts, MESSAGE_ID)
    region = F.pmod(F.col("key"), F.lit(len(regions)))
    region_first = (
        F.col("key") == regions.pick(region, [F.col(f"k{i}") for i in numbers])
    ) & F.col(SEQUENCE).eqNullSafe(regions.pick(region, [F.col(f"s{i}") for i in numbers]))
    unexpected = regions.pick(region, [F.col(f"u{i}") for i in numbers])
    # Equal copies are counted together (a shuffle of these messages' copies alone).
    columns = [MESSAGE_ID, "key", SEQUENCE, "first_key"]
    counted = joined.groupBy(
        *columns, region_first.alias("region_first"), unexpected.alias("unexpected")
    ).agg(F.count(F.lit(1)).alias("n"))
    if observed is not None:
        others = F.col("n") - F.col("region_first").cast("long")
        late = derived.late(F.col("key"), watermark_seconds, F.col("first_key"))
        counted = counted.observe(
            observed,
            F.coalesce(F.sum(F.when(late, others)), F.lit(0)).alias("late"),
            *[
                F.coalesce(F.sum(F.when(region == index, F.col("n") - 1)), F.lit(0)).alias(
                    f"repeats{index}"
                )
                for index in numbers
            ],
        )
    kinds = F.concat(
        F.array(
            F.when(F.col("region_first") & F.col("unexpected"), F.lit(UNEXPECTED_REGION)),
            F.when(~F.col("region_first"), F.lit(IN_REGION)),
        ),
        F.array_repeat(F.lit(CAPTURE_REPEAT), (F.col("n") - 1).cast("int")),
    )
    return counted.select(*columns, F.explode(kinds).alias("kind")).where(F.col("kind").isNotNull())


def missing_rows(
    summary: DataFrame, regions: RegionIndex, expect: list[tuple[str, str]]
) -> DataFrame:
    """One row per message and region it should be in and is not: ``message_id``, ``region``
    (where it is missing), ``origin`` and the first copy's ``enqueued_time_utc``."""
    derived = Summary(regions)
    where = F.array(
        *[
            F.when(derived.missing(index, expect), F.lit(name))
            for index, name in enumerate(regions.names)
        ]
    )
    return summary.select(
        MESSAGE_ID,
        F.explode(where).alias(REGION),
        regions.name(F.col("origin")).alias("origin"),
        F.timestamp_micros(derived.first_time).alias(ENQUEUED),
    ).where(F.col(REGION).isNotNull())


def looping_rows(summary: DataFrame, regions: RegionIndex) -> DataFrame:
    """One row per looping message: ``message_id``, ``origin``, ``copies`` and the first copy's
    ``region`` and ``enqueued_time_utc``."""
    derived = Summary(regions)
    return summary.where(F.col("loop")).select(
        MESSAGE_ID,
        regions.name(F.col("origin")).alias("origin"),
        derived.copies.alias("copies"),
        regions.name(derived.first_region).alias(REGION),
        F.timestamp_micros(derived.first_time).alias(ENQUEUED),
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

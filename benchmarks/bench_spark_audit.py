"""Throughput of the batch duplicate audit, its scaling, and DuckDB references, in one run.

Run: ``.venv/bin/python benchmarks/bench_spark_audit.py [--sizes 1000000,10000000] [--repeat 3]
[--engines local,standalone]``.

For each N it generates N messages published across 3 regions (weu, neu, eus) and replicated
all-active, with 1% of replicas lost, 2% delivered twice in a region and lags of 0.1-3 s (a few
with clock skew), writes them as parquet per region, then times, on each of ``--engines``
(``local[2]``; a standalone cluster of a master and two one-core workers started from pyspark's
``spark-class``, whose executors are JVMs of their own), ``--repeat`` times in turn (the machine
may be shared: each Spark run has its DuckDB runs right after it):

- the batch audit including report and writing ``unique/`` and ``duplicates/`` (``run_audit``);
- DuckDB computing the same ``unique`` set (earliest copy per message id) from the same files
  (the reference of issue 26's goals: it neither reads the properties nor writes anything);
- DuckDB writing ``unique/`` and ``duplicates/`` (the in-region duplicates: every replica is
  expected here) as parquet from the same files (closer to the audit's work, still without the
  properties, the lags and the figures).
- Spark computing the same ``unique`` set on the same files, the fastest way found, and
  discarding the rows (``time_spark_floor``): the engine's own floor. The audit does this work
  and more (it reads the properties, computes every figure and writes its outputs).

Before the timed runs, one untimed audit of ``--warmup`` messages lets the JVM compile its hot
paths (a first audit in a fresh JVM takes about twice as long; its time is printed apart).
It prints input records per second and both Spark/DuckDB time ratios per run, their minimum,
median and maximum per size, and time(largest)/time(smallest) of the medians (linear scaling
would be the size ratio). Then it runs the ``--streaming`` deduplication on the smallest size
split into files and prints the largest number of state rows the query held, to show the state
stays bounded by the watermark.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812

from replication.properties import REPL_HOPS, REPL_ORIGIN, REPL_PATH
from spark._inputs import read_inputs, select_inputs
from spark._storage import OutputFolder, files_of
from spark._streaming import deduplicate_stream
from spark.dedup_audit import FULL, run_audit

REGIONS = ["weu", "neu", "eus"]
T0 = 1_714_560_000  # 2024-05-01T12:00:00Z


def generate(spark: SparkSession, count: int, root: Path, files_per_region: int) -> dict[str, str]:
    """Write the regions' captures; return REGION -> folder."""
    messages = spark.range(count).select(
        F.col("id"),
        F.concat(F.lit("m-"), F.col("id").cast("string")).alias("message_id"),
        (F.col("id") % 3).cast("int").alias("origin_index"),
        (F.lit(T0) + F.col("id") / F.lit(1000.0)).alias("published"),
    )
    paths = {}
    for index, region in enumerate(REGIONS):
        is_origin = F.col("origin_index") == index
        origin = F.element_at(F.array(*[F.lit(r) for r in REGIONS]), F.col("origin_index") + 1)
        lag = F.when(is_origin, F.lit(0.0)).otherwise(
            0.1 + F.abs(F.hash("id", F.lit(region)) % 2900).cast("double") / 1000.0
        )
        skew = F.when((F.col("id") % 997 == 0) & ~is_origin, F.lit(-45.0)).otherwise(F.lit(0.0))
        lost = (~is_origin) & (F.abs(F.hash("id", F.lit(region), F.lit("lost"))) % 100 == 0)
        properties = F.when(is_origin, F.create_map()).otherwise(
            F.create_map(
                F.lit(REPL_ORIGIN), origin,
                F.lit(REPL_PATH), F.concat(origin, F.lit(f";{region}")),
                F.lit(REPL_HOPS), F.lit("1"),
            )
        )  # fmt: skip
        copies = messages.where(~lost).select(
            "message_id",
            (F.col("published") + lag + skew).cast("timestamp").alias("enqueued_time_utc"),
            properties.cast("map<string,string>").alias("properties"),
            F.col("id").alias("sequence_number"),
        )
        twice = copies.where(F.abs(F.hash("message_id", F.lit(region))) % 50 == 0).withColumn(
            "enqueued_time_utc", F.col("enqueued_time_utc") + F.expr("INTERVAL 2 SECONDS")
        )
        path = root / region
        # Like real captures, each file holds one slice of time (a stream reads them in order).
        frame = copies.unionByName(twice)
        frame.repartitionByRange(files_per_region, "enqueued_time_utc").write.parquet(str(path))
        paths[region] = str(path)
    return paths


def time_spark(spark: SparkSession, paths: dict[str, str], output: Path) -> tuple[float, int]:
    """The audit as ``run`` does it: list and check the input files, audit, write both report
    files through the session's filesystem and move the staged outputs into place."""
    started = time.perf_counter()
    folder = OutputFolder(spark, str(output))
    folder.open()
    selected = select_inputs(files_of(spark), paths, "parquet", FULL, timedelta(seconds=30))
    records: DataFrame = read_inputs(
        spark, {region: s.files for region, s in selected.items()}, "parquet"
    )
    result = run_audit(records, list(paths), 30.0, [], folder)
    folder.write_text("report.json", json.dumps(result.report))
    folder.commit()
    return time.perf_counter() - started, int(result.report["total_records"])


def time_spark_floor(spark: SparkSession, paths: dict[str, str]) -> float:
    """Spark computing what :func:`time_duckdb` computes, and nothing else: each message id's
    earliest copy from the same files, without the properties, any figure or any output (the
    rows go to Spark's ``noop`` sink). The audit does this work and more, so this ratio to
    DuckDB is, in practice, the least the audit's can be on this engine and machine.

    It is written the fastest way found for Spark, the audit's own: a copy as one 64-bit key
    (``time_µs * regions + region number``), whose minimum is the first copy (a hash
    aggregation of fixed-width values). ``min_by(region, struct(time, region, sequence))``,
    DuckDB's formulation, took 1.4x as long at 10M messages (48.7 s against 34.4, medians of 3
    runs, 2026-11-27). Ties within one region and microsecond are not broken by sequence
    number, which the floor does not need.
    """
    started = time.perf_counter()
    copies = None
    for number, (_, path) in enumerate(sorted(paths.items())):
        key = F.unix_micros("enqueued_time_utc") * F.lit(len(paths)) + F.lit(number)
        frame = spark.read.parquet(path).select("message_id", key.alias("key"))
        copies = frame if copies is None else copies.unionByName(frame)
    assert copies is not None
    first = copies.groupBy("message_id").agg(F.min("key").alias("key"))
    regions = F.pmod(F.col("key"), F.lit(len(paths))).alias("region")
    first.select("message_id", regions).write.format("noop").mode("overwrite").save()
    return time.perf_counter() - started


def _duckdb_copies(paths: dict[str, str]) -> str:
    """Every region's copies as one DuckDB relation (SQL text)."""
    return " UNION ALL ".join(
        f"SELECT '{region}' AS region, message_id, enqueued_time_utc, sequence_number "
        f"FROM read_parquet('{path}/*.parquet')"
        for region, path in paths.items()
    )


def time_duckdb(paths: dict[str, str]) -> tuple[float, int]:
    """DuckDB computing the ``unique`` set: (seconds, unique messages)."""
    import duckdb

    started = time.perf_counter()
    connection = duckdb.connect()
    connection.execute("SET threads TO 2")
    unique = connection.execute(
        f"SELECT message_id, arg_min(region, (enqueued_time_utc, region, sequence_number)) "
        f"FROM ({_duckdb_copies(paths)}) GROUP BY message_id"
    ).fetchall()
    return time.perf_counter() - started, len(unique)


def time_duckdb_outputs(paths: dict[str, str], output: Path) -> float:
    """DuckDB writing ``unique/`` (first copy and copy count per message id) and
    ``duplicates/`` (every copy but a region's first, with its message's first copy: the
    audit's duplicates here, where every replica is expected) as parquet: seconds."""
    import duckdb

    output.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    connection = duckdb.connect()
    connection.execute("SET threads TO 2")
    connection.execute(
        "CREATE TEMP TABLE ranked AS SELECT *, row_number() OVER copies AS rank, "
        "count(*) OVER (PARTITION BY message_id) AS copies, "
        "first_value(region) OVER copies AS first_region, "
        "first_value(enqueued_time_utc) OVER copies AS first_enqueued_time_utc, "
        "row_number() OVER (PARTITION BY message_id, region "
        "ORDER BY enqueued_time_utc, sequence_number) AS region_rank "
        f"FROM ({_duckdb_copies(paths)}) WINDOW copies AS (PARTITION BY message_id "
        "ORDER BY enqueued_time_utc, region, sequence_number)"
    )
    connection.execute(
        "COPY (SELECT message_id, region, enqueued_time_utc, sequence_number, copies "
        f"FROM ranked WHERE rank = 1) TO '{output / 'unique.parquet'}' (FORMAT parquet)"
    )
    connection.execute(
        "COPY (SELECT message_id, region, enqueued_time_utc, sequence_number, first_region, "
        f"first_enqueued_time_utc FROM ranked WHERE region_rank > 1) "
        f"TO '{output / 'duplicates.parquet'}' (FORMAT parquet)"
    )
    connection.close()
    return time.perf_counter() - started


def spread(values: list[float], spec: str = ".1f") -> str:
    """``median (min-max)`` of ``values``, each formatted with ``spec``."""
    return f"{statistics.median(values):{spec}} ({min(values):{spec}}-{max(values):{spec}})"


COMMON_SETTINGS = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "16",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.memory": "6g",
    "spark.ui.showConsoleProgress": "false",
}
STANDALONE_SETTINGS = {
    "spark.executor.cores": "1",
    "spark.executor.memory": "3g",
    "spark.cores.max": "2",
}
"""Two executors of one core and 3 GB, one per worker: the cluster's two cores, as ``local[2]``
has them, but in JVMs of their own, with shuffles between them through the block manager."""


def session(master: str) -> SparkSession:
    builder = SparkSession.builder.master(master)
    settings = COMMON_SETTINGS | ({} if master.startswith("local") else STANDALONE_SETTINGS)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


@contextmanager
def engine_master(engine: str, work: Path) -> Iterator[str]:
    """The master URL of ``engine``: ``local[2]``, or a standalone cluster of two one-core
    workers started from pyspark's ``spark-class`` for the run (tests/spark/engines.py)."""
    if engine == "local":
        yield "local[2]"
        return
    from tests.spark.engines import standalone_cluster

    with standalone_cluster(work / "standalone", workers=2, memory="4g") as cluster:
        yield cluster.url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000000,10000000")
    parser.add_argument("--streaming-size", type=int, default=200_000)
    parser.add_argument("--warmup", type=int, default=100_000, help="messages; 0: none")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per size")
    parser.add_argument(
        "--engines",
        default="local",
        help="comma-separated: local (local[2]) and/or standalone (a master and two one-core "
        "workers), each timed on the same files in this run",
    )
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    engines = args.engines.split(",")
    work = Path(tempfile.mkdtemp(prefix="bench-audit-"))
    timings: dict[tuple[str, int], float] = {}
    spark = session("local[2]")
    try:
        inputs = {
            size: generate(spark, size, work / f"in-{size}", files_per_region=4)
            for size in [*([args.warmup] if args.warmup else []), *sizes]
        }
        for engine in engines:
            with engine_master(engine, work) as master:
                spark.stop()
                spark = session(master)
                label = "local[2]" if engine == "local" else "standalone, 2 workers"
                if args.warmup:
                    seconds, records = time_spark(spark, inputs[args.warmup], work / "out-warm")
                    print(
                        f"{label}: warm-up (not counted): {records:,} records in {seconds:.1f} s",
                        flush=True,
                    )
                for size in sizes:
                    timings[(engine, size)] = time_size(
                        spark, label, size, inputs[size], work, args
                    )
                spark.stop()
                spark = session("local[2]")
        for engine in engines:
            if len(sizes) > 1:
                small, large = min(sizes), max(sizes)
                ratio = timings[(engine, large)] / timings[(engine, small)]
                print(
                    f"{engine}: time({large:,}) / time({small:,}) = {ratio:.2f} "
                    f"(medians; size ratio {large / small:.0f})"
                )
        paths = generate(spark, args.streaming_size, work / "in-stream", files_per_region=20)
        stats = deduplicate_stream(
            spark, paths, "parquet", "30 seconds", str(work / "stream-out"), str(work / "ckpt")
        )
        print(
            f"streaming N={args.streaming_size:,}: {stats.batches} micro-batches, at most "
            f"{stats.max_state_rows:,} state rows, {stats.dropped_by_watermark:,} rows dropped "
            "by the watermark"
        )
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


def time_size(
    spark: SparkSession,
    label: str,
    size: int,
    paths: dict[str, str],
    work: Path,
    args: argparse.Namespace,
) -> float:
    """``--repeat`` runs of the audit, DuckDB's two references and Spark's floor on one size;
    prints each run and the spread; returns the audit's median time."""
    runs: list[tuple[float, float, float, float]] = []
    records = 0
    for run in range(args.repeat):
        seconds, records = time_spark(spark, paths, work / f"out-{size}")
        duck_seconds, duck_unique = time_duckdb(paths)
        outputs_seconds = time_duckdb_outputs(paths, work / f"duck-{size}")
        floor_seconds = time_spark_floor(spark, paths)
        runs.append((seconds, duck_seconds, outputs_seconds, floor_seconds))
        print(
            f"N={size:>11,} run {run + 1}: {records:>11,} records in {seconds:7.1f} s = "
            f"{records / seconds:>9,.0f} records/s (Spark {label}); DuckDB unique "
            f"{duck_unique:,} in {duck_seconds:5.1f} s, Spark/DuckDB = "
            f"{seconds / duck_seconds:.1f}; DuckDB writing unique/ and duplicates/ "
            f"{outputs_seconds:5.1f} s, Spark/that = {seconds / outputs_seconds:.1f}; "
            f"Spark computing only unique (the floor) {floor_seconds:5.1f} s, that/DuckDB = "
            f"{floor_seconds / duck_seconds:.1f}, audit/floor = {seconds / floor_seconds:.2f}; "
            f"load {os.getloadavg()[0]:.1f}",
            flush=True,
        )
    print(
        f"N={size:>11,} ({label}): median (min-max) of {len(runs)} runs: Spark "
        f"{spread([run[0] for run in runs])} s = "
        f"{spread([records / run[0] for run in runs], ',.0f')} records/s; "
        f"Spark/DuckDB unique {spread([run[0] / run[1] for run in runs])}; "
        f"Spark/DuckDB writing {spread([run[0] / run[2] for run in runs])}; "
        f"the floor, Spark computing only unique / DuckDB "
        f"{spread([run[3] / run[1] for run in runs])}; audit / floor "
        f"{spread([run[0] / run[3] for run in runs], '.2f')}",
        flush=True,
    )
    return statistics.median(run[0] for run in runs)


if __name__ == "__main__":
    main()

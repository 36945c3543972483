"""One local SparkSession for the Spark tests (local[2], UI off, few shuffle partitions).

``./dev.sh test`` hands each test file of the Spark tier to one process (pytest-xdist's
``--dist loadfile``), so that a file's tests share one session and the demo's tests, which
start their own Spark in a subprocess, run beside them."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from replication.showcase import SHORT_RUN_JVM

pyspark = pytest.importorskip("pyspark")

# SHORT_RUN_JVM, the demo audit's JVM options (the quick JIT only, the serial collector), suit a
# session of many small jobs too: they change how fast the tests run, not what Spark computes
# (on the shared 2-core machine the JVM's CPU time for test_dedup_audit.py fell from 82 s to 43 s).


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", os.sys.executable)  # type: ignore[attr-defined]
    session = (
        SparkSession.builder.master("local[2]")
        .appName("replication-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.extraJavaOptions", f"-Duser.timezone=UTC {SHORT_RUN_JVM}")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()

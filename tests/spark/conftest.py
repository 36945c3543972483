"""One local SparkSession for the Spark tests (local[2], UI off, few shuffle partitions)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

pyspark = pytest.importorskip("pyspark")


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
        .config("spark.driver.extraJavaOptions", "-Duser.timezone=UTC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()

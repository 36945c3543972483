"""Spark engines started from pyspark's own distribution, for tests that run the audit on them:
a standalone cluster (a master and two workers, ``spark-class``) and a Spark Connect server
(``org.apache.spark.sql.connect.service.SparkConnectServer``, what ``sbin/start-connect-server.sh``
starts, here in the foreground so the test owns its process).

There is no local stand-in for Databricks, Synapse or ABFS: these are the engines that can run
here. Each is one process group, ended by its id when the test module is done.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyspark

from replication.drill._processes import await_output
from replication.showcase import SHORT_RUN_JVM

SPARK_HOME = Path(pyspark.__file__).resolve().parent
ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 180.0


def spark_environment() -> dict[str, str]:
    """The environment of every JVM and Python process of these engines: pyspark's home, this
    interpreter for Python workers, the checkout importable, loopback only."""
    return {
        **os.environ,
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "SPARK_DAEMON_JAVA_OPTS": SHORT_RUN_JVM,
    }


@dataclass
class Engine:
    """A started engine: its address and the process groups to end."""

    url: str
    processes: list[subprocess.Popen[bytes]]
    logs: Path

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()

    def log_tail(self) -> str:
        return "\n".join(
            f"--- {log.name}\n{log.read_text(errors='replace')[-3000:]}"
            for log in sorted(self.logs.glob("*.log"))
        )


def _start(command: list[str], log: Path, environment: dict[str, str]) -> subprocess.Popen[bytes]:
    with log.open("wb") as handle:
        return subprocess.Popen(
            command,
            stdout=handle,
            stderr=subprocess.STDOUT,
            env=environment,
            start_new_session=True,  # a process group of its own, ended with killpg
        )


def _wait(what: str, ready: object, engine: Engine) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if callable(ready) and ready():
            return
        if any(process.poll() is not None for process in engine.processes):
            break
        time.sleep(1)
    engine.stop()
    raise RuntimeError(f"{what} did not start:\n{engine.log_tail()}")


def _port_printed(what: str, engine: Engine, log: Path, pattern: bytes) -> int:
    """The port ``engine``'s last process printed to ``log`` in the line ``pattern`` matches
    (its group 1).

    Every service is started on port 0, so the system picks a free port and the engine prints
    it: a port chosen beforehand by the test may be taken by another process before the JVM
    binds it, and Spark then moves to the next port (``spark.port.maxRetries``) while the test
    would talk to the other process.
    """
    try:
        found, _ = await_output(
            engine.processes[-1], log, 0, re.compile(pattern), timeout=START_TIMEOUT
        )
    except TimeoutError as error:
        engine.stop()
        raise RuntimeError(f"{what} did not start: {error}\n{engine.log_tail()}") from None
    if found is None:
        engine.stop()
        raise RuntimeError(f"{what} ended before it listened:\n{engine.log_tail()}")
    return int(found.group(1))


@contextmanager
def standalone_cluster(work: Path, workers: int = 2, memory: str = "1g") -> Iterator[Engine]:
    """A master and ``workers`` workers of one core and ``memory`` each; yields
    ``spark://host:port`` once every worker has registered (the master's JSON status page says
    so). Also what ``benchmarks/bench_spark_audit.py --engines standalone`` times on."""
    work.mkdir(parents=True, exist_ok=True)
    # The master's REST submission server listens on a fixed port (6066) unless disabled;
    # these tests submit through the master's own port.
    environment = {**spark_environment(), "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false"}
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    engine = Engine("", [], work)
    engine.processes.append(
        _start(
            [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
             "--port", "0", "--webui-port", "0"],
            work / "master.log", environment,
        )
    )  # fmt: skip
    port = _port_printed(
        "the standalone master",
        engine,
        work / "master.log",
        rb"service 'sparkMaster' on port (\d+)",
    )
    ui = _port_printed(
        "the standalone master", engine, work / "master.log", rb"service 'MasterUI' on port (\d+)"
    )
    engine.url = url = f"spark://127.0.0.1:{port}"
    for index in range(workers):
        engine.processes.append(
            _start(
                [spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                 "--cores", "1", "--memory", memory, "--webui-port", "0",
                 "--work-dir", str(work / f"worker-{index}"), url],
                work / f"worker-{index}.log", environment,
            )
        )  # fmt: skip

    def registered() -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=5) as page:
                status = json.load(page)
        except OSError:
            return False
        return int(status.get("aliveworkers", 0)) >= workers

    _wait("the standalone cluster", registered, engine)
    try:
        yield engine
    finally:
        engine.stop()


@contextmanager
def connect_server(work: Path) -> Iterator[Engine]:
    """A Spark Connect server on ``local[2]``; yields ``sc://host:port`` once it says it
    listens.

    ``copyFromLocalToFs`` may write to the server's local filesystem here (a setting Spark
    documents as meant for tests): this server's default filesystem is the local disk, where
    a real deployment's is DBFS, HDFS or ABFS.
    """
    work.mkdir(parents=True, exist_ok=True)
    engine = Engine("", [], work)
    log = work / "connect-server.log"
    engine.processes.append(
        _start(
            [str(SPARK_HOME / "bin" / "spark-submit"),
             "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
             "--name", "Spark Connect server", "--master", "local[2]",
             "--driver-java-options", f"-Duser.timezone=UTC {SHORT_RUN_JVM}",
             "--conf", "spark.connect.grpc.binding.port=0",
             "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
             "--conf", "spark.ui.enabled=false",
             "--conf", "spark.sql.shuffle.partitions=4",
             "--conf", "spark.sql.artifact.copyFromLocalToFs.allowDestLocal=true",
             "--conf", "spark.connect.copyFromLocalToFs.allowDestLocal=true",
             "spark-internal"],
            log, spark_environment(),
        )
    )  # fmt: skip
    port = _port_printed(
        "the Spark Connect server", engine, log, rb"Spark Connect server started at: [\d.]+:(\d+)"
    )
    engine.url = f"sc://127.0.0.1:{port}"
    try:
        yield engine
    finally:
        engine.stop()


def run_audit_process(
    command: list[str], cwd: Path, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """Run an audit command (``spark-submit`` or ``python -m spark.dedup_audit``) in ``cwd``."""
    return subprocess.run(
        command, cwd=cwd, env=spark_environment(), capture_output=True, text=True,
        timeout=timeout, check=False,
    )  # fmt: skip

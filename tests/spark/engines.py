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
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyspark

from replication.showcase import SHORT_RUN_JVM

SPARK_HOME = Path(pyspark.__file__).resolve().parent
ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 180.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


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


@contextmanager
def standalone_cluster(work: Path, workers: int = 2, memory: str = "1g") -> Iterator[Engine]:
    """A master and ``workers`` workers of one core and ``memory`` each; yields
    ``spark://host:port`` once every worker has registered (the master's JSON status page says
    so). Also what ``benchmarks/bench_spark_audit.py --engines standalone`` times on."""
    work.mkdir(parents=True, exist_ok=True)
    environment = spark_environment()
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    port, ui = free_port(), free_port()
    url = f"spark://127.0.0.1:{port}"
    engine = Engine(url, [], work)
    engine.processes.append(
        _start(
            [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
             "--port", str(port), "--webui-port", str(ui)],
            work / "master.log", environment,
        )
    )  # fmt: skip
    for index in range(workers):
        engine.processes.append(
            _start(
                [spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                 "--cores", "1", "--memory", memory, "--webui-port", str(free_port()),
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
    """A Spark Connect server on ``local[2]``; yields ``sc://host:port`` once it accepts
    connections.

    ``copyFromLocalToFs`` may write to the server's local filesystem here (a setting Spark
    documents as meant for tests): this server's default filesystem is the local disk, where
    a real deployment's is DBFS, HDFS or ABFS.
    """
    work.mkdir(parents=True, exist_ok=True)
    port = free_port()
    engine = Engine(f"sc://127.0.0.1:{port}", [], work)
    engine.processes.append(
        _start(
            [str(SPARK_HOME / "bin" / "spark-submit"),
             "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
             "--name", "Spark Connect server", "--master", "local[2]",
             "--driver-java-options", f"-Duser.timezone=UTC {SHORT_RUN_JVM}",
             "--conf", f"spark.connect.grpc.binding.port={port}",
             "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
             "--conf", "spark.ui.enabled=false",
             "--conf", "spark.sql.shuffle.partitions=4",
             "--conf", "spark.sql.artifact.copyFromLocalToFs.allowDestLocal=true",
             "--conf", "spark.connect.copyFromLocalToFs.allowDestLocal=true",
             "spark-internal"],
            work / "connect-server.log", spark_environment(),
        )
    )  # fmt: skip

    def listening() -> bool:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2):
                return True
        except OSError:
            return False

    _wait("the Spark Connect server", listening, engine)
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

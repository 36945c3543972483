"""Fixtures of the host-protocol tier: the local emulator and the real Python worker.

This tier runs on Python 3.13 in ``.venv-host`` (``./dev.sh test`` creates it), because the
Python worker runtime on PyPI, ``azure-functions-runtime``, is the one Azure Functions loads for
Python 3.13 apps. The emulator needs python-qpid-proton, which has no 3.13 wheel, so it runs
as a subprocess of the main ``.venv`` (``python -m emulator --topology``), exactly as a user
runs it, and the tests talk to it over AMQP with the unmodified SDKs.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.host.host import WorkerSession

ROOT = Path(__file__).resolve().parents[2]
TOPOLOGY = Path(__file__).with_name("topology.json")
EMULATOR_PYTHON = os.environ.get(
    "REPLICATION_EMULATOR_PYTHON", str(ROOT / ".venv" / "bin" / "python")
)


@pytest.fixture(scope="session")
def emulator_settings(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The app settings (connection strings) of the emulator serving ``topology.json``."""
    log = tmp_path_factory.mktemp("emulator") / "emulator.log"
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            [EMULATOR_PYTHON, "-m", "emulator", "--topology", str(TOPOLOGY)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
        settings: dict[str, str] = {}
        deadline = time.monotonic() + 60
        assert process.stdout is not None
        while len(settings) < 3:
            line = process.stdout.readline()
            if not line or time.monotonic() > deadline:
                process.kill()
                pytest.fail(f"the emulator did not start: {log.read_text()[-2000:]}")
            if line.startswith("export "):
                name, _, value = line.removeprefix("export ").strip().partition("=")
                settings[name] = value.strip("'")
        try:
            yield settings
        finally:
            process.terminate()
            process.wait(timeout=20)


@pytest.fixture(scope="session")
def worker(
    emulator_settings: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WorkerSession]:
    """The Python worker with the Function app of ``topology.json``, initialized and loaded."""
    log = tmp_path_factory.mktemp("worker") / "worker.log"
    settings = {
        "FUNCTIONS_WORKER_RUNTIME": "python",
        "REPLICATION_TOPOLOGY": str(TOPOLOGY),
        **emulator_settings,
    }
    with WorkerSession(settings, log=log) as session:
        session.start()
        yield session

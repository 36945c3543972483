"""Fixtures of the host-protocol tier: the local emulator and the real Python worker.

This tier runs on Python 3.13 in ``.venv-host`` (``./dev.sh test`` creates it), because the
Python worker runtime on PyPI, ``azure-functions-runtime``, is the one Azure Functions loads for
Python 3.13 apps. The emulator needs python-qpid-proton, which has no 3.13 wheel, so it runs
as a subprocess of the main ``.venv`` (``python -m emulator --topology``), exactly as a user
runs it, and the tests talk to it over AMQP with the unmodified SDKs.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from replication.hosts.local import emulator_process
from tests.host.host import WorkerSession

ROOT = Path(__file__).resolve().parents[2]
TOPOLOGY = Path(__file__).with_name("topology.json")
EMULATOR_PYTHON = os.environ.get(
    "REPLICATION_EMULATOR_PYTHON", str(ROOT / ".venv" / "bin" / "python")
)


@pytest.fixture(scope="session")
def emulator_settings() -> Iterator[dict[str, str]]:
    """The app settings (connection strings) of the emulator serving ``topology.json``."""
    with emulator_process(TOPOLOGY, python=EMULATOR_PYTHON) as settings:
        yield settings


@pytest.fixture(scope="session")
def capture_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the app's Service Bus captures write (``REPLICATION_CAPTURE_STORAGE``)."""
    return tmp_path_factory.mktemp("captures")


@pytest.fixture(scope="session")
def worker(
    emulator_settings: dict[str, str],
    capture_folder: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[WorkerSession]:
    """The Python worker with the Function app of ``topology.json``, initialized and loaded."""
    log = tmp_path_factory.mktemp("worker") / "worker.log"
    settings = {
        "FUNCTIONS_WORKER_RUNTIME": "python",
        "REPLICATION_TOPOLOGY": str(TOPOLOGY),
        "REPLICATION_CAPTURE_STORAGE": str(capture_folder),
        **emulator_settings,
    }
    with WorkerSession(settings, log=log) as session:
        session.start()
        yield session

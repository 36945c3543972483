"""The library as its users adopt it: a wheel, a clean environment, an app of their own, the worker.

The test builds the wheel from this checkout (``pip wheel``, setuptools as ``pyproject.toml``
requires it), creates a clean virtual environment with the Python of this tier (3.13), installs
the wheel there with the worker runtime the Functions host loads for Python 3.13 apps
(versions from ``requirements-host.txt``, everything constrained by ``requirements.txt``, the
pins the Function app is tested with), and writes an app **outside this repository**: its own
``topology.json``, a ``my_transforms.py`` with one transform, and a ``function_app.py`` that
registers it in code and calls ``build_app``. The worker indexes that app with the checkout
removed from its ``sys.path`` (``isolated``), so ``replication`` can only come from the wheel, and
the invocations are built as the host builds them (:mod:`tests.host.host_conversion`) from
messages the emulator delivered.

Installing needs PyPI (as ``./dev.sh`` does); pip's cache makes later runs quick.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from azure.servicebus import ServiceBusMessage

from replication.hosts.local import emulator_process
from replication.properties import (
    DEAD_LETTER_ERROR_DESCRIPTION,
    DEAD_LETTER_REASON,
    REPL_HOPS,
    REPL_ORIGIN,
    REPL_PATH,
)
from tests.host.brokers import drain
from tests.host.conftest import EMULATOR_PYTHON
from tests.host.host import WorkerSession
from tests.host.test_servicebus_trigger import _body, _properties, replicate

ROOT = Path(__file__).resolve().parents[2]
WHEEL_SOURCES = (
    "pyproject.toml",
    "setup.py",
    "LICENSE",
    "docs",
    "replication",
    "patterns",
    "emulator",
    "spark",
    "examples",
    "infra",
)

TOPOLOGY: dict[str, Any] = {
    "namespaces": [
        {
            "name": "weu",
            "region": "westeurope",
            "kind": "servicebus",
            "fullyQualifiedNamespace": "user-app-weu.servicebus.windows.net",
            "connection": "SB_WEU",
            "queues": [{"name": "orders"}],
        },
        {
            "name": "neu",
            "region": "northeurope",
            "kind": "servicebus",
            "fullyQualifiedNamespace": "user-app-neu.servicebus.windows.net",
            "connection": "SB_NEU",
            "queues": [{"name": "orders"}],
        },
        {
            # Where the second message was first published: three namespaces allow two hops.
            "name": "eus",
            "region": "eastus",
            "kind": "servicebus",
            "fullyQualifiedNamespace": "user-app-eus.servicebus.windows.net",
            "connection": "SB_EUS",
        },
    ],
    "tasks": [
        {
            "name": "orders-masked",
            "pattern": "validation",
            "source": {"namespace": "weu", "entity": "orders"},
            "targets": [{"namespace": "neu", "entity": "orders"}],
            "transform": "mask_card",
            "options": {"requiredProperties": ["masked"]},
        }
    ],
}

TRANSFORMS = """
import json

from replication.envelope import Envelope
from replication.transforms import RejectMessage, TransformResult, Transforms


def mask_card(message: Envelope) -> TransformResult:
    order = json.loads(message.body)
    if "card" not in order:
        return RejectMessage("no card number")
    if order["card"] == "boom":
        raise ConnectionError("card vault unreachable")
    order["card"] = "*" * 12 + order["card"][-4:]
    body = json.dumps(order).encode()
    return message.replace(body=body).with_properties({"masked": True})


transforms = Transforms()
transforms.register("mask_card")(mask_card)
"""


def _pins(path: Path) -> list[str]:
    return [
        line.strip()
        for line in path.read_text().splitlines()
        if line.strip() and not line.startswith(("#", "-r"))
    ]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built from a copy of the files that go into it."""
    source = tmp_path_factory.mktemp("source")
    for name in WHEEL_SOURCES:
        origin = ROOT / name
        if origin.is_dir():
            shutil.copytree(origin, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(origin, source / name)
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(source)],
        check=True,
        timeout=600,
    )
    (built,) = out.glob("*.whl")
    return built


@pytest.fixture(scope="module")
def environment(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clean virtual environment with the wheel and the worker runtime; returns its python."""
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    worker_runtime = [
        pin for pin in _pins(ROOT / "requirements-host.txt") if not pin.startswith("pytest")
    ]
    subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-c",
            str(ROOT / "requirements.txt"),
            str(wheel),
            *worker_runtime,
        ],
        check=True,
        timeout=900,
    )
    return python


@pytest.fixture(scope="module")
def app(environment: Path, wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``replication init`` from the clean environment, then this test's topology and
    transforms in place of the example's."""
    directory = tmp_path_factory.mktemp("apps") / "contoso-app"
    assert not directory.resolve().is_relative_to(ROOT)
    subprocess.run(
        [str(environment.parent / "replication"), "init", str(directory), "--wheel", str(wheel)],
        cwd=directory.parent,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        check=True,
        capture_output=True,
        timeout=120,
    )
    assert (directory / "wheels" / wheel.name).is_file()
    (directory / "topology.json").write_text(json.dumps(TOPOLOGY, indent=2))
    (directory / "app_transforms.py").write_text(textwrap.dedent(TRANSFORMS))
    return directory


@pytest.fixture(scope="module")
def settings(app: Path) -> Iterator[dict[str, str]]:
    with emulator_process(app / "topology.json", python=EMULATOR_PYTHON) as connections:
        yield connections


@pytest.fixture(scope="module")
def user_worker(
    environment: Path, app: Path, settings: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WorkerSession]:
    log = tmp_path_factory.mktemp("user-worker") / "worker.log"
    app_settings = {
        "FUNCTIONS_WORKER_RUNTIME": "python",
        "REPLICATION_TOPOLOGY": str(app / "topology.json"),
        **settings,
    }
    with WorkerSession(
        app_settings, log=log, app_directory=app, python=str(environment), isolated=True
    ) as session:
        session.start()
        yield session


def test_the_wheel_installs_no_generic_top_level_name_and_declares_ranges(
    wheel: Path, environment: Path
) -> None:
    probe = subprocess.run(
        [
            str(environment),
            "-c",
            "import importlib.util, importlib.metadata as m, replication, replication.patterns;"
            "print(importlib.util.find_spec('patterns') is None);"
            "print(replication.__file__);"
            "print('\\n'.join(m.requires('azure-messaging-replication')))",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd="/",
    )
    no_patterns, location, *requires = probe.stdout.splitlines()
    assert no_patterns == "True"
    assert "site-packages" in location
    assert not Path(location).resolve().is_relative_to(ROOT)
    # Ranges, not pins: an application's own pins can be satisfied beside the library's.
    assert requires
    # (the version part, before any marker: `extra == "monitor"` is a marker, not a pin)
    assert not [r for r in requires if "==" in r.partition(";")[0]], requires
    assert any(
        re.match(r"azure-servicebus<8,>=7\.15|azure-servicebus>=7\.15,<8", r) for r in requires
    )


def test_a_user_app_outside_the_repository_replicates_through_its_transform(
    user_worker: WorkerSession, settings: dict[str, str]
) -> None:
    """The replicas carry the transformed body and properties and the replication properties
    of the message as received; a rejected and a failing message are parked alone."""
    assert set(user_worker.functions) == {"orders-masked"}
    run = uuid.uuid4().hex[:8]
    published = [
        ServiceBusMessage(
            json.dumps({"order": 1, "card": "4111111111111111"}),
            message_id=f"{run}-plain",
            application_properties={"tenant": "contoso"},
        ),
        ServiceBusMessage(
            json.dumps({"order": 2, "card": "5500000000000004"}),
            message_id=f"{run}-from-eus",
            # Already replicated once, from eus: its path must go on, not restart.
            application_properties={REPL_ORIGIN: "eus", REPL_PATH: "eus;weu", REPL_HOPS: 1},
        ),
        ServiceBusMessage(json.dumps({"order": 3}), message_id=f"{run}-no-card"),
        ServiceBusMessage(json.dumps({"order": 4, "card": "boom"}), message_id=f"{run}-boom"),
    ]
    response = replicate(
        user_worker, settings, "orders-masked", published, source=("SB_WEU", "orders", None)
    )
    assert user_worker.succeeded(response), response.result.exception.message
    replicas = {str(m.message_id): m for m in drain(settings["SB_NEU"], "orders", 2)}
    assert set(replicas) == {f"{run}-plain", f"{run}-from-eus"}
    plain = replicas[f"{run}-plain"]
    assert json.loads(_body(plain)) == {"order": 1, "card": "************1111"}
    properties = _properties(plain)
    assert (properties["tenant"], properties["masked"]) == ("contoso", True)
    assert (properties[REPL_ORIGIN], properties[REPL_PATH], properties[REPL_HOPS]) == (
        "weu",
        "weu;neu",
        1,
    )
    onward = _properties(replicas[f"{run}-from-eus"])
    assert json.loads(_body(replicas[f"{run}-from-eus"]))["card"] == "************0004"
    assert (onward[REPL_ORIGIN], onward[REPL_PATH], onward[REPL_HOPS]) == ("eus", "eus;weu;neu", 2)
    parked = {str(m.message_id): m for m in drain(settings["SB_WEU"], "replication-parked", 2)}
    assert set(parked) == {f"{run}-no-card", f"{run}-boom"}
    rejected = _properties(parked[f"{run}-no-card"])
    assert (rejected[DEAD_LETTER_REASON], rejected[DEAD_LETTER_ERROR_DESCRIPTION]) == (
        "TransformRejected",
        "no card number",
    )
    failed = _properties(parked[f"{run}-boom"])
    assert failed[DEAD_LETTER_REASON] == "TransformFailed"
    assert failed[DEAD_LETTER_ERROR_DESCRIPTION] == (
        "transform mask_card: ConnectionError: card vault unreachable"
    )
    # The parked copies are the messages as received.
    assert json.loads(_body(parked[f"{run}-boom"])) == {"order": 4, "card": "boom"}

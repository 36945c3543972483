"""Microsoft's SDK samples, fetched at test time, and an emulator with what they use.

The samples come from the source distributions of the azure-servicebus and azure-eventhub
versions pinned in requirements.txt, downloaded from PyPI with pip into ``.cache/sdk-samples/``
(outside git; reused when present). They are run unmodified; nothing of them is committed.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "sdk-samples"
PACKAGES = {"servicebus": "azure-servicebus", "eventhub": "azure-eventhub"}

EMULATOR_CONFIG = {
    "UserConfig": {
        "Namespaces": [{"Name": "samples-sb", "Queues": [{"Name": "samples-queue"}]}],
        "NamespaceConfig": [
            {
                "Type": "EventHub",
                "Name": "samples-eh",
                "Entities": [{"Name": "samples-hub", "PartitionCount": 2, "ConsumerGroups": []}],
            }
        ],
    }
}


def pinned_version(package: str) -> str:
    """The version of ``package`` pinned in requirements.txt."""
    text = (ROOT / "requirements.txt").read_text(encoding="utf-8")
    found = re.search(rf"^{re.escape(package)}==(\S+)$", text, re.MULTILINE)
    if found is None:
        raise RuntimeError(f"{package} is not pinned in requirements.txt")
    return found[1]


def _extract(package: str, version: str) -> Path:
    """The ``samples/`` folder of ``package``'s sdist, downloaded and unpacked once."""
    folder = CACHE / f"{package}-{version}"
    samples = folder / "samples"
    if samples.is_dir():
        return samples
    download = CACHE / "downloads"
    download.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
         f"{package}=={version}", "--dest", str(download)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    archives = sorted(download.glob(f"{package.replace('-', '_')}-{version}.tar.gz"))
    if result.returncode != 0 or not archives:
        raise RuntimeError(
            f"cannot download the {package}=={version} source distribution from PyPI "
            f"(the samples tier needs it): {result.stderr.strip()[-500:]}"
        )
    prefix = f"{package.replace('-', '_')}-{version}/samples/"
    with tarfile.open(archives[0]) as archive:
        members = [m for m in archive.getmembers() if m.name.startswith(prefix) and m.isfile()]
        for member in members:
            member.name = "samples/" + member.name[len(prefix) :]
            archive.extract(member, folder, filter="data")
    return samples


@pytest.fixture(scope="session")
def sdk_samples() -> dict[str, Path]:
    """Every sample file, keyed ``servicebus/...`` / ``eventhub/...`` (see catalog.py)."""
    found: dict[str, Path] = {}
    for short, package in PACKAGES.items():
        samples = _extract(package, pinned_version(package))
        for path in sorted(samples.rglob("*.py")):
            found[f"{short}/{path.relative_to(samples).as_posix()}"] = path
    return found


@pytest.fixture(scope="session")
def sample_environment() -> Iterator[dict[str, str]]:
    """The environment variables the in-scope samples read, pointing at a running emulator."""
    pytest.importorskip("proton", reason="the emulator needs python-qpid-proton")
    from emulator import run_emulator

    with run_emulator(EMULATOR_CONFIG) as running:
        yield {
            "SERVICEBUS_CONNECTION_STR": running.connection_string("samples-sb"),
            "SERVICEBUS_QUEUE_NAME": "samples-queue",
            "EVENT_HUB_CONN_STR": running.connection_string("samples-eh"),
            "EVENT_HUB_NAME": "samples-hub",
        }


def pytest_collection_modifyitems(items: list[Any]) -> None:
    for item in items:
        if "tests/samples/" in str(item.fspath):
            item.add_marker(pytest.mark.samples)

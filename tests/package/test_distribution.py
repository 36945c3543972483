"""The distribution itself: what the wheel holds and declares, and every command's ``--help``
from the console script of a clean environment, without extras and with ``[all]``."""

from __future__ import annotations

import email
import re
import tarfile
import zipfile
from email.message import Message
from pathlib import Path

import pytest

from replication import __version__
from replication.cli import COMMANDS
from replication.extras import DISTRIBUTION, EXTRAS
from tests.package.conftest import ROOT, Dist, Environments, run

DISTRIBUTIONS_OF_EXTRAS = {
    "monitor": {
        "azure-monitor-opentelemetry",
        "opentelemetry-sdk",
        "opentelemetry-exporter-otlp-proto-http",
    },
    "lint": {"pycep-parser"},
    "local": {"python-qpid-proton", "json5"},
    "audit": {"pyspark", "fastavro", "pandas", "pyarrow"},
}
"""The distributions each extra declares (``pyproject.toml``), as ``replication.extras`` names
their modules; the test below checks the two tables agree."""
MODULES_OF_DISTRIBUTIONS = {
    "azure-monitor-opentelemetry": "azure.monitor.opentelemetry",
    "opentelemetry-sdk": "opentelemetry.sdk",
    "opentelemetry-exporter-otlp-proto-http": "opentelemetry.exporter.otlp.proto.http",
    "pycep-parser": "pycep",
    "python-qpid-proton": "proton",
    "json5": "json5",
    "pyspark": "pyspark",
    "fastavro": "fastavro",
    "pandas": "pandas",
    "pyarrow": "pyarrow",
}


def _metadata(wheel: Path) -> Message:
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        return email.message_from_bytes(archive.read(name))


def test_the_wheel_holds_the_library_and_its_parts_under_one_top_level_name(dist: Dist) -> None:
    with zipfile.ZipFile(dist.wheel) as archive:
        names = set(archive.namelist())
    top = {name.split("/")[0] for name in names}
    assert top == {"replication", f"{DISTRIBUTION.replace('-', '_')}-{__version__}.dist-info"}
    for part in (
        "replication/py.typed",
        "replication/patterns/all_active.py",
        "replication/emulator/__main__.py",
        "replication/emulator/_cli.py",
        "replication/audit/__main__.py",
        "replication/audit/dedup_audit.py",
        "replication/audit/jobs/databricks-job.json",
        "replication/audit/jobs/synapse-job-definition.json",
        "replication/examples/two-region-all-active.json",
        "replication/examples/user_transforms.py",
        "replication/infra/main.bicep",
        "replication/infra/workbook.json",
        "replication/infra/README.md",
        "replication/infra/modules/functionapp.bicep",
        "replication/infra/scripts/render-parameters.sh",
        "replication/scaffold/template/function_app.py.in",
        "replication/scaffold/template/host.json",
    ):
        assert part in names, part
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]


def test_the_metadata_is_short_licensed_by_spdx_and_links_absolutely(dist: Dist) -> None:
    metadata = _metadata(dist.wheel)
    assert metadata["License-Expression"] == "MIT"
    assert not [c for c in metadata.get_all("Classifier", []) if c.startswith("License ::")]
    description = metadata.get_payload()
    assert isinstance(description, str)
    assert 500 < len(description) < 4000
    links = re.findall(r"\]\(([^)]+)\)", description)
    assert links
    assert all(link.startswith("https://") for link in links), links
    assert metadata["Requires-Python"] == ">=3.11"


def test_the_extras_declared_are_the_extras_the_commands_name(dist: Dist) -> None:
    metadata = _metadata(dist.wheel)
    assert set(metadata.get_all("Provides-Extra", [])) == {*EXTRAS, "all"}
    declared: dict[str, set[str]] = {}
    for requirement in metadata.get_all("Requires-Dist", []):
        match = re.match(r"([A-Za-z0-9_.-]+).*extra == \"(\w+)\"", requirement)
        if match:
            declared.setdefault(match.group(2), set()).add(match.group(1))
    assert declared.pop("all") == {DISTRIBUTION}
    assert declared == DISTRIBUTIONS_OF_EXTRAS
    for name, extra in EXTRAS.items():
        assert set(extra.modules) == {MODULES_OF_DISTRIBUTIONS[d] for d in declared[name]}
    needed = {extra for command in COMMANDS.values() for extra in command.extras}
    assert needed <= set(EXTRAS)


def test_the_sdist_holds_what_the_wheel_is_built_from(dist: Dist) -> None:
    with tarfile.open(dist.sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    for name in (
        "pyproject.toml",
        "setup.py",
        "LICENSE",
        "docs/pypi-readme.md",
        "emulator/_cli.py",
        "spark/dedup_audit.py",
        "infra/main.bicep",
        "examples/two-region-all-active.json",
        "replication/scaffold/template/host.json",
    ):
        assert name in names, name  # fmt: skip


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_helps_without_extras_or_names_the_one_it_needs(
    environments: Environments, outside: Path, command: str
) -> None:
    result = run(["replication", command, "--help"], cwd=outside, venv=environments.bare)
    assert "Traceback" not in result.stderr
    if result.returncode == 0:
        assert result.stdout.startswith(f"usage: replication {command} ")
        return
    needed = COMMANDS[command].extras
    assert needed, result.stderr
    extra = needed[0]
    assert result.returncode == 2
    assert result.stderr == (
        f"error: replication {command} needs the '{extra}' extra (missing: "
        f"{', '.join(EXTRAS[extra].modules)}): pip install '{DISTRIBUTION}[{extra}]'\n"
    )


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_helps_with_all_extras(
    environments: Environments, outside: Path, command: str
) -> None:
    result = run(["replication", command, "--help"], cwd=outside, venv=environments.full)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"usage: replication {command} ")


def test_the_console_script_says_its_name_and_version(
    environments: Environments, outside: Path
) -> None:
    version = run(["replication", "--version"], cwd=outside, venv=environments.bare)
    assert (version.returncode, version.stdout) == (0, f"replication {__version__}\n")
    python = environments.bare / "bin" / "python"
    usage = run([python, "-m", "replication", "--help"], cwd=outside)
    assert usage.stdout.startswith("usage: python -m replication ")
    bad = run(["replication", "validate", "--no-such-flag"], cwd=outside, venv=environments.bare)
    assert bad.returncode == 2
    assert bad.stderr.startswith("usage: replication validate ")
    assert bad.stderr.endswith("error: unrecognized arguments: --no-such-flag\n")


def test_bicep_linting_without_its_extra_is_one_line(
    environments: Environments, outside: Path
) -> None:
    (outside / "infra").mkdir()
    topology = outside / "topology.json"
    topology.write_text((ROOT / "examples" / "two-region-all-active.json").read_text())
    result = run(
        ["replication", "lint-rules", "--topology", topology, "--bicep-root", "infra"],
        cwd=outside,
        venv=environments.bare,
    )
    assert (result.returncode, result.stderr) == (
        2,
        "error: replication lint-rules --bicep-root needs the 'lint' extra (missing: pycep): "
        f"pip install '{DISTRIBUTION}[lint]'\n",
    )


def test_the_readme_says_what_the_wheel_holds(dist: Dist) -> None:
    """The README's account of the wheel's layout is the wheel's: each folder it says is
    installed inside the library is there, under the name it gives."""
    readme = (ROOT / "README.md").read_text()
    claimed = re.findall(r"`(\w+)/`\s+as\s+`(replication\.\w+)`", readme)
    with zipfile.ZipFile(dist.wheel) as archive:
        packages = {name.rsplit("/", 1)[0].replace("/", ".") for name in archive.namelist()}
    assert {folder for folder, _ in claimed} == {
        "patterns",
        "emulator",
        "spark",
        "examples",
        "infra",
    }
    for folder, installed in claimed:
        assert installed in packages, (folder, installed)
        assert any((ROOT / folder).iterdir())

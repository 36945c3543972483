"""The test tiers of ``tests/conftest.py``: which tests a bare ``pytest``, ``--tier`` and named
paths run, the guard that fails a fast-tier test opening a listening socket, and the check that
every test lies under its tier's paths.

Each case runs pytest in a subprocess on a small project made of the suite's own conftest and
marker list, so the real hooks decide."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytest_plugins = ["pytester"]

FAST = """
import socket


def test_fast() -> None:
    assert True


def test_serves() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
"""

WIRE = """
import pytest


@pytest.mark.emulator
def test_on_the_wire() -> None:
    assert True
"""

DEMO = """
import pytest

pytestmark = [pytest.mark.emulator, pytest.mark.spark]


def test_the_demo() -> None:
    assert True
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A project with the suite's conftest and markers: two fast tests (one of them listens), an
    emulator test, and the demo's kind (spark and emulator), each where its tier's tests live."""
    options = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    markers = options["tool"]["pytest"]["ini_options"]["markers"]
    pytester.makeini("[pytest]\ntestpaths = tests\nmarkers =\n    " + "\n    ".join(markers))
    tests = pytester.mkdir("tests")
    (tests / "conftest.py").write_text((ROOT / "tests" / "conftest.py").read_text("utf-8"))
    for folder, name, text in (("unit", "test_fast", FAST), ("e2e", "test_wire", WIRE)):
        (tests / folder).mkdir()
        (tests / folder / f"{name}.py").write_text(text)
    (tests / "e2e" / "test_demo.py").write_text(DEMO)
    return pytester


def test_a_bare_pytest_runs_the_fast_tier_where_listening_fails(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess("-v")
    result.assert_outcomes(passed=1, failed=1, deselected=2)
    result.stdout.fnmatch_lines(
        [
            "*test_fast PASSED*",
            "*test_serves opens a listening socket*mark it pytest.mark.emulator*",
        ]
    )


def test_tier_runs_one_tier_and_spark_wins_over_emulator(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess("--tier=spark", "-v", "tests")
    result.assert_outcomes(passed=1, deselected=3)
    result.stdout.fnmatch_lines(["*test_the_demo PASSED*"])


def test_named_paths_run_every_tier(project: pytest.Pytester) -> None:
    project.runpytest_subprocess("tests").assert_outcomes(passed=3, failed=1)


def test_a_test_outside_its_tiers_paths_stops_the_run(project: pytest.Pytester) -> None:
    (project.path / "tests" / "unit" / "test_misplaced.py").write_text(WIRE)
    result = project.runpytest_subprocess("tests/unit")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*test_misplaced.py::test_on_the_wire is in the emulator tier, outside its paths*"]
    )

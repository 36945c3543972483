"""Settings for the whole suite: its tiers, a guard that keeps the fast tier fast, and the
``figures`` fixture every tier shares (fixtures live beside the tests that use them).

Every test belongs to exactly one tier, named by its markers (``docs/development.md``):

========  =================================================================================
tier      what it needs
========  =================================================================================
fast      nothing: no marker, no emulator, no Spark, no sleeps (unit, SQL, infra, the
          emulator's own parts)
emulator  the emulator served in-process, over AMQP with the real SDKs (``emulator`` marker)
faults    one emulator process per namespace, killed and restarted (``faults``)
spark     a local SparkSession (``spark``; the demo too)
samples   Microsoft's SDK samples against the emulator (``samples``)
tools     the Azure CLI and checkov, each from its own environment (``tools``, tests/infra)
package   the built distribution in clean environments outside the repository (``package``,
          tests/package)
docs      the documentation site built with ``mkdocs build --strict``, its code blocks run,
          its pages in headless Chromium (``docs``, tests/docs)
========  =================================================================================

A bare ``pytest`` (no paths, no ``-m``) runs the fast tier only. Naming paths runs every tier
under them, ``-m`` selects by marker as usual, and ``--tier=NAME`` runs one tier (what
``./dev.sh test`` does, one tier after another, on the tier's ``TIER_PATHS``).

A fast-tier test that opens a listening socket (an emulator, Azurite, any server) fails with a
message saying to mark it: a forgotten marker would otherwise slow down every inner loop.

The host-protocol tier (``tests/host/``) runs on Python 3.13 in its own environment:
``./dev.sh test`` runs it separately with ``--confcutdir=tests/host``, so this file does not
apply there, and a plain ``pytest`` on the main environment leaves it out.
"""

from __future__ import annotations

import sys
from collections.abc import Generator
from typing import Any

import pytest
from hypothesis import settings

collect_ignore = ["host"]

# No per-example deadline for property-based tests: Hypothesis's default (200 ms) is a timed
# assertion, and on a loaded 2-core machine an example of a pure function took 292 ms. What a
# property test checks is the property; how long the code takes is the benchmarks' business.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")

SLOW_TIERS = ("package", "samples", "spark", "faults", "emulator", "tools", "docs")
"""The tiers named by a marker, in precedence order: the demo (``emulator`` and ``spark``) is
in the Spark tier, a fault test (``faults`` and ``emulator``) in the fault tier."""
FAST = "fast"
TIERS = (FAST, *SLOW_TIERS)

TIER_PATHS = {
    FAST: ("tests",),
    "emulator": ("tests/e2e", "tests/emulator"),
    "faults": ("tests/faults",),
    "spark": ("tests/spark", "tests/e2e/test_demo.py", "tests/e2e/test_demo_topology.py"),
    "samples": ("tests/samples",),
    "tools": ("tests/infra",),
    "package": ("tests/package",),
    "docs": ("tests/docs",),
}
"""Where each tier's tests live. ``./dev.sh test`` collects only these for a tier, because every
pytest-xdist process collects what it is given (all of ``tests/`` costs seconds of CPU a
process). A test outside its tier's paths is a collection error, so none can be left out."""


def tier_of(item: pytest.Item) -> str:
    """The one tier ``item`` belongs to."""
    return next((name for name in SLOW_TIERS if item.get_closest_marker(name)), FAST)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--tier",
        choices=TIERS,
        help="run only the tests of this tier: " + ", ".join(TIERS),
    )


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep one tier: the one ``--tier`` names, or the fast tier for a bare ``pytest``.

    Runs after the conftests that mark whole folders or modules (``tests/faults``,
    ``tests/samples``, ``tests/infra``)."""
    for item in items:
        paths = TIER_PATHS[tier_of(item)]
        if not any(_under(item, path) for path in paths):
            raise pytest.UsageError(
                f"{item.nodeid} is in the {tier_of(item)} tier, outside its paths {paths}: "
                "./dev.sh test would not run it (tests/conftest.py, TIER_PATHS)"
            )
    tier: str | None = config.getoption("--tier")
    named = config.args_source is pytest.Config.ArgsSource.ARGS
    bare = not named and not config.option.markexpr
    if tier is None and bare:
        tier = FAST
    if tier is None:
        return
    kept = [item for item in items if tier_of(item) == tier]
    deselected = [item for item in items if tier_of(item) != tier]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept


def _under(item: pytest.Item, path: str) -> bool:
    location = item.path.relative_to(item.config.rootpath).as_posix()
    return location == path or location.startswith(path + "/")


_running_fast_test: list[str] = []
"""The node id of the fast-tier test running now, if one is (read by the audit hook)."""


def _refuse_listening_sockets(event: str, _args: tuple[Any, ...]) -> None:
    if event == "socket.bind" and _running_fast_test:
        raise RuntimeError(
            f"{_running_fast_test[0]} opens a listening socket (an emulator, Azurite or another "
            "server) but has no tier marker: mark it pytest.mark.emulator (tests/conftest.py)"
        )


def pytest_configure(config: pytest.Config) -> None:
    # An audit hook (PEP 578) sees every bind, also inside libraries; it cannot be removed, so
    # it checks a flag that is set only while a fast-tier test runs.
    sys.addaudithook(_refuse_listening_sockets)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    """Setup, call and teardown of a fast-tier test run under the listening-socket guard."""
    if tier_of(item) == FAST:
        _running_fast_test.append(item.nodeid)
    try:
        return (yield)
    finally:
        _running_fast_test.clear()


FIGURES: dict[str, object] = {}


@pytest.fixture
def figures() -> dict[str, object]:
    """Figures a test measured (never asserted), printed at the end of the run (``-s`` not
    needed)."""
    return FIGURES


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if FIGURES:
        terminalreporter.section("figures measured by the tests")
        for name, value in FIGURES.items():
            terminalreporter.write_line(f"{name}: {value}")

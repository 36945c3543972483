"""Settings for the whole suite (fixtures live beside the tests that use them), and the
``figures`` fixture every tier shares.

The host-protocol tier (``tests/host/``) runs on Python 3.13 in its own environment:
``./dev.sh test`` runs it separately with ``--confcutdir=tests/host``, so this file does not
apply there, and a plain ``pytest`` on the main environment leaves it out.
"""

import pytest

collect_ignore = ["host"]

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

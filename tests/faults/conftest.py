"""The fault suite needs the emulator (python-qpid-proton) like the end-to-end tests."""

from __future__ import annotations

import pytest

pytest.importorskip("proton", reason="the emulator needs python-qpid-proton (requirements-dev.txt)")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/faults/" in str(item.fspath):
            item.add_marker(pytest.mark.faults)
            item.add_marker(pytest.mark.emulator)


FIGURES: dict[str, object] = {}


@pytest.fixture
def figures() -> dict[str, object]:
    """Figures a fault test measured; printed at the end of the run (``-s`` not needed)."""
    return FIGURES


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if FIGURES:
        terminalreporter.section("fault suite figures")
        for name, value in FIGURES.items():
            terminalreporter.write_line(f"{name}: {value}")

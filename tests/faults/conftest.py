"""The fault suite needs the emulator (python-qpid-proton) like the end-to-end tests."""

from __future__ import annotations

import pytest

pytest.importorskip("proton", reason="the emulator needs python-qpid-proton (requirements-dev.txt)")


LONGEST = (
    "test_sessions.py::test_a_session_enabled_all_active_pair_keeps_order_per_session_across_a_kill",
    "test_poison.py::test_messages_the_sdk_cannot_decode_reach_the_dead_letter_queue_alone",
    "test_sessions.py::test_stream_to_queue_turns_partition_keys_into_ordered_sessions_across_a",
)
"""The longest fault tests (one to two minutes each; the others take 10 to 50 s), moved to the
front so that pytest-xdist starts them first instead of last (``./dev.sh test`` runs this tier
on several processes). A renamed test only loses its place."""


def _start_rank(item: pytest.Item) -> int:
    return next(
        (rank for rank, name in enumerate(LONGEST) if item.nodeid.split("/")[-1].startswith(name)),
        len(LONGEST),
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    faults = [item for item in items if "tests/faults/" in str(item.fspath)]
    for item in faults:
        item.add_marker(pytest.mark.faults)
        item.add_marker(pytest.mark.emulator)
    # Stable: the fault tests keep their slots among the others, in the new order.
    slots = [index for index, item in enumerate(items) if "tests/faults/" in str(item.fspath)]
    for index, item in zip(slots, sorted(faults, key=_start_rank), strict=True):
        items[index] = item


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

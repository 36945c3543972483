"""The fault suite needs the emulator (python-qpid-proton) like the end-to-end tests."""

from __future__ import annotations

import pytest

pytest.importorskip("proton", reason="the emulator needs python-qpid-proton (requirements-dev.txt)")


LONGEST = (
    "test_status.py::test_status_follows_an_event_hubs_task_through_every_state",
    "test_status.py::test_status_follows_a_service_bus_task_through_every_state",
    "test_parking_and_redrive.py::test_event_hub_poison_keeps_its_properties_and_position",
    "test_outages.py::test_a_target_down_for_a_while_loses_nothing_and_dead_letters_nothing",
    "test_sessions.py::test_a_session_enabled_all_active_pair_keeps_order_per_session_across_a_kill",
    "test_session_order_race.py::test_sessions_keep_their_order_when_the_sdk_keep_alive_thread",
    "test_poison.py::test_messages_the_sdk_cannot_decode_reach_the_dead_letter_queue_alone",
    "test_failover.py::test_a_planned_drill_loses_nothing_and_processes_each_message_once",
    "test_outages.py::test_a_flapping_target_loses_nothing",
)
"""The longest fault tests, longest first (the first about 100 s, the others 35 to 55 s; most
take 10 to 30 s). ``./dev.sh test`` runs this tier on several processes with pytest-xdist,
whose load scheduling hands each process the next two tests of the collection to start with
and then the next ones as it finishes: each of these is followed by one of the others, so that
the longest start at once on processes of their own and the next longest as soon as one is free,
instead of last or two on one. A renamed test only loses its place."""


def _longest_spread(faults: list[pytest.Item]) -> list[pytest.Item]:
    def rank(item: pytest.Item) -> int:
        name = item.nodeid.split("/")[-1]
        return next((i for i, prefix in enumerate(LONGEST) if name.startswith(prefix)), -1)

    longest = sorted((item for item in faults if rank(item) >= 0), key=rank)
    others = [item for item in faults if rank(item) < 0]
    spread: list[pytest.Item] = []
    for item in longest:
        spread.append(item)
        if others:
            spread.append(others.pop(0))
    return spread + others


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    faults = [item for item in items if "tests/faults/" in str(item.fspath)]
    for item in faults:
        item.add_marker(pytest.mark.faults)
        item.add_marker(pytest.mark.emulator)
    # The fault tests keep their slots among the others, in the new order.
    slots = [index for index, item in enumerate(items) if "tests/faults/" in str(item.fspath)]
    for index, item in zip(slots, _longest_spread(faults), strict=True):
        items[index] = item

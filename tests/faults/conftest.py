"""The fault suite needs the emulator (python-qpid-proton) like the end-to-end tests."""

from __future__ import annotations

import pytest

pytest.importorskip("proton", reason="the emulator needs python-qpid-proton (requirements-dev.txt)")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/faults/" in str(item.fspath):
            item.add_marker(pytest.mark.faults)
            item.add_marker(pytest.mark.emulator)

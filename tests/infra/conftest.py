"""The infrastructure tests that run a third-party tool (the Azure CLI, checkov) form the
``tools`` tier (tests/conftest.py): each runs processes of several seconds, too slow for the fast
tier. Such a module is recognised by what it imports: ``require`` of ``tools.py``, which finds
the tool's environment."""

from __future__ import annotations

import pytest

from tests.infra import tools


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        module = getattr(item, "module", None)
        if module is not None and getattr(module, "require", None) is tools.require:
            item.add_marker(pytest.mark.tools)

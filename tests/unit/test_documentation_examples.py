"""The examples in the library's docstrings run and print what they say."""

from __future__ import annotations

import doctest
from types import ModuleType

import pytest

import replication.sql


@pytest.mark.parametrize("module", [replication.sql], ids=lambda m: m.__name__)
def test_docstring_examples(module: ModuleType) -> None:
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, "the module's docstring lost its examples"
    assert result.failed == 0

"""The documentation tier: every test here is marked ``docs``.

``site`` builds the site once per test process with ``mkdocs build --strict`` (a broken link,
a missing page, a broken reference or an unknown generator fails it); ``reference`` is the
build's generator module (``docs/hooks/reference.py``), loaded by path as MkDocs loads it.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.is_relative_to(Path(__file__).parent):
            item.add_marker(pytest.mark.docs)


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The built site (``mkdocs build --strict``, as ``./dev.sh test`` runs it)."""
    folder = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(folder)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return folder


@pytest.fixture(scope="session")
def reference() -> ModuleType:
    """``docs/hooks/reference.py``, the generators of the reference pages."""
    spec = importlib.util.spec_from_file_location(
        "docs_reference", ROOT / "docs" / "hooks" / "reference.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

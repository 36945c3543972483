"""The third-party tool environments the infrastructure tests drive, created by ``./dev.sh``.

The Azure CLI (``.venv-azcli``, ``requirements-azcli.txt``) and checkov (``.venv-checkov``,
``requirements-checkov.txt``) each live in an environment of their own: both pin dependencies
that clash with the project's (and each other's), and neither is needed by the library.
Without the environment a test is skipped with the command that creates it; under CI (``CI`` set,
as ``.ci/run`` runs) a missing environment fails instead, so the checks cannot silently vanish.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
AZ_CLI_PYTHON = ROOT / ".venv-azcli" / "bin" / "python"
CHECKOV = ROOT / ".venv-checkov" / "bin" / "checkov"


def require(tool: Path, what: str) -> Path:
    """``tool``, or skip (fail under CI) when its environment has not been created."""
    if tool.exists():
        return tool
    message = f"{what} is not installed ({tool}): run ./dev.sh test, which creates it"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


__all__ = ["AZ_CLI_PYTHON", "CHECKOV", "ROOT", "require"]

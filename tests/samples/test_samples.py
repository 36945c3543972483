"""Microsoft's own azure-sdk-for-python samples, unmodified, against the emulator.

A regression suite that is not ours: each in-scope sample of the pinned SDK versions runs as
its own process with the environment it documents, and passes when it exits 0 without a
traceback. ``catalog.py`` says which samples are in scope and why the others are not.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .catalog import CATALOG

SAMPLE_TIMEOUT = 180
"""A hang guard for one sample process, not a performance claim."""


def test_every_sample_of_the_pinned_sdks_is_classified(sdk_samples: dict[str, Path]) -> None:
    unclassified = sorted(set(sdk_samples) - set(CATALOG))
    gone = sorted(set(CATALOG) - set(sdk_samples))
    assert not unclassified, (
        f"classify these new samples in tests/samples/catalog.py: {unclassified}"
    )
    assert not gone, f"these samples are no longer in the SDKs: {gone}"


def _cases() -> list[object]:
    cases: list[object] = []
    for path, scope in sorted(CATALOG.items()):
        if not scope.run:
            continue
        marks = (
            [pytest.mark.xfail(strict=True, reason=scope.known_failure)]
            if scope.known_failure
            else []
        )
        cases.append(pytest.param(path, id=path, marks=marks))
    return cases


@pytest.mark.parametrize("sample", _cases())
def test_a_sample_runs_against_the_emulator(
    sample: str,
    sdk_samples: dict[str, Path],
    sample_environment: dict[str, str],
    tmp_path: Path,
) -> None:
    environment = {key: value for key, value in os.environ.items() if not key.startswith("AZURE_")}
    environment.update(sample_environment)
    result = subprocess.run(
        [sys.executable, str(sdk_samples[sample])],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=SAMPLE_TIMEOUT,
        check=False,
    )
    output = f"stdout:\n{result.stdout[-2000:]}\nstderr:\n{result.stderr[-4000:]}"
    assert result.returncode == 0, output
    assert "Traceback" not in result.stderr, output

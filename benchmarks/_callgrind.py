"""Counting a process's instructions with valgrind's callgrind, for the benchmarks whose
CPU-time ratios this shared machine blurs (``--instructions`` of ``bench_telemetry.py`` and
``bench_local_host_floor.py``).

A count does not depend on what else the machine runs; it weighs every instruction alike, so it
stands in for CPU time without measuring it. Every counted process runs with
``PYTHONHASHSEED=0``: the same dict layouts, so the same work, in every process.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

HASH_SEED = {"PYTHONHASHSEED": "0"}
"""The environment every counted process gets on top of its own."""


def callgrind(arguments: Sequence[str], output: str | Path = "/dev/null") -> list[str]:
    """The command that runs ``arguments`` under callgrind, writing its profile to ``output``
    (``%p`` is the process id; numbered files follow for each :func:`dump`)."""
    return ["valgrind", "--tool=callgrind", f"--callgrind-out-file={output}", *arguments]


def count_python(arguments: Sequence[str], environ: Mapping[str, str]) -> int:
    """The instructions of ``python ARGUMENTS`` (this interpreter) from start to exit."""
    finished = subprocess.run(
        callgrind([sys.executable, *arguments]),
        env={**environ, **HASH_SEED},
        capture_output=True,
        text=True,
        check=True,
    )
    found = re.search(r"Collected : (\d+)", finished.stderr)
    if found is None:
        raise RuntimeError(f"callgrind printed no count: {finished.stderr[-500:]}")
    return int(found.group(1))


def dump(pid: int) -> None:
    """Make the callgrind process ``pid`` write what it counted since its last dump (to the
    next numbered file) and start counting from zero."""
    subprocess.run(["callgrind_control", "--dump", str(pid)], check=True, capture_output=True)


def dumped_total(path: Path) -> int:
    """The instructions in one callgrind profile file."""
    found = re.search(r"^totals: (\d+)", path.read_text(errors="replace"), re.MULTILINE)
    if found is None:
        raise RuntimeError(f"{path} has no totals line")
    return int(found.group(1))

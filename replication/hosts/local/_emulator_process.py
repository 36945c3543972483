"""Run the local emulator as a child process, as a user runs it, and read its app settings.

``python -m emulator --topology FILE`` prints one ``export SETTING='CONNECTION-STRING'`` line per
connection setting of the topology's namespaces and a ``# emulator running`` line, then serves
until it is stopped. The demo, the host-protocol tests and the benchmarks start it this way: the
library never imports the emulator (which depends on the library), and the emulator does not
share the caller's GIL.

The emulator needs python-qpid-proton (``requirements-dev.txt``); ``python`` names the
interpreter that has it, by default the current one.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from replication.exceptions import EmulatorStartError

EXPORT = "export "


@contextlib.contextmanager
def emulator_process(
    topology: str | os.PathLike[str],
    *,
    python: str | os.PathLike[str] = sys.executable,
    startup_timeout: float = 60.0,
) -> Iterator[dict[str, str]]:
    """Serve ``topology``'s namespaces until the block exits; yields the app settings."""
    root = Path(__file__).resolve().parents[3]  # the repository, where `emulator` is a package
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(
            [os.fspath(python), "-m", "emulator", "--topology", os.fspath(topology)],
            cwd=root,
            stdout=subprocess.PIPE,
            stderr=log,
            bufsize=0,
        )
        try:
            yield _read_settings(process, log, startup_timeout)
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _read_settings(
    process: subprocess.Popen[bytes], log: IO[bytes], timeout: float
) -> dict[str, str]:
    assert process.stdout is not None
    settings: dict[str, str] = {}
    pending = b""
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        # Read what is there, never more than until the deadline: an emulator that hangs
        # before printing fails the start instead of blocking the caller.
        while selector.select(max(0.0, deadline - time.monotonic())):
            chunk = os.read(process.stdout.fileno(), 65536)
            if not chunk:
                break
            *lines, pending = (pending + chunk).split(b"\n")
            for line in (raw.decode("utf-8", errors="replace") for raw in lines):
                if line.startswith(EXPORT):
                    name, _, value = line.removeprefix(EXPORT).strip().partition("=")
                    settings[name] = value.strip("'")
                elif line.startswith("#") and settings:
                    return settings  # the emulator's "running" line follows the settings
    log.seek(0)
    output = log.read().decode(errors="replace").strip().splitlines()[-10:]
    raise EmulatorStartError("the emulator did not start: " + " | ".join(output))


__all__ = ["EmulatorStartError", "emulator_process"]

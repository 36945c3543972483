"""Run the local emulator as a child process, as a user runs it, and read its app settings.

``python -m replication.emulator --topology FILE`` (``python -m emulator`` in a checkout:
:data:`~replication.layout.EMULATOR`) prints one ``export SETTING='CONNECTION-STRING'`` line per
connection setting of the topology's namespaces and a ``# emulator running`` line, then serves
until it is stopped; ``--config FILE`` prints ``NAME<TAB>CONNECTION-STRING``
per namespace instead. The demo, the host-protocol tests and the benchmarks start it this way:
the library never imports the emulator (which depends on the library), and the emulator does not
share the caller's GIL.

:func:`emulator_process` serves a topology for the length of a ``with`` block.
:class:`EmulatorProcess` serves an emulator config and can be killed (SIGKILL, a crash) and
started again on the same ports: with ``data_dir`` what it acknowledged survives, so a namespace
can go down and come back under a running replicator.

The emulator needs python-qpid-proton (the ``local`` extra); ``python`` names the interpreter
that has it, by default the current one. The child runs in the caller's working directory, so
relative paths mean what they mean to the caller.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from replication.exceptions import EmulatorStartError
from replication.layout import EMULATOR, child_environment

EXPORT = "export "
_PORT = re.compile(r"sb://[^:;/]+:(\d+)")
SECTIONS = ("Namespaces", "NamespaceConfig")
"""The lists of namespaces in an emulator config (Service Bus, Event Hubs)."""


@contextlib.contextmanager
def emulator_process(
    topology: str | os.PathLike[str],
    *,
    python: str | os.PathLike[str] = sys.executable,
    startup_timeout: float = 60.0,
) -> Iterator[dict[str, str]]:
    """Serve ``topology``'s namespaces until the block exits; yields the app settings."""
    with tempfile.TemporaryFile() as log:
        process = _spawn(python, ["--topology", os.fspath(topology)], log)
        try:
            yield _read_settings(process, log, startup_timeout)
        finally:
            _end(process, kill=False)


class EmulatorProcess:
    """``python -m emulator --config`` for ``config``, startable again on the same ports.

    :meth:`start` returns the connection string of every namespace by name. After the first
    start the ports it chose are written into the config, so starting it again after
    :meth:`kill` or :meth:`stop` serves the same connection strings. With ``data_dir`` every
    namespace keeps its messages across a kill (see ``emulator/_persistence.py``). The
    emulator's log is ``workdir/emulator.log``.
    """

    def __init__(
        self,
        config: Mapping[str, Any],
        workdir: Path,
        *,
        data_dir: Path | None = None,
        python: str | os.PathLike[str] = sys.executable,
        startup_timeout: float = 60.0,
    ) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self._config = json.loads(json.dumps(config))
        self._config_path = workdir / "emulator-config.json"
        self._log_path = workdir / "emulator.log"
        self._data_dir = data_dir
        self._python = python
        self._timeout = startup_timeout
        self._process: subprocess.Popen[bytes] | None = None
        self.connections: dict[str, str] = {}

    def start(self) -> dict[str, str]:
        """Start serving; the connection string of every namespace by name."""
        self._config_path.write_text(json.dumps(self._config), encoding="utf-8")
        arguments = ["--config", str(self._config_path)]
        if self._data_dir is not None:
            arguments += ["--data-dir", str(self._data_dir)]
        with self._log_path.open("a+b") as log:
            self._process = _spawn(self._python, arguments, log)
            try:
                self.connections = _read_settings(self._process, log, self._timeout)
            except EmulatorStartError:
                _end(self._process, kill=True)
                raise
        self._pin_ports()
        return self.connections

    def _pin_ports(self) -> None:
        for section in SECTIONS:
            for namespace in self._config["UserConfig"].get(section) or []:
                match = _PORT.search(self.connections.get(namespace["Name"], ""))
                if match:
                    namespace["Port"] = int(match.group(1))

    def kill(self) -> None:
        """SIGKILL: the namespaces crash; with ``data_dir`` what they acknowledged survives."""
        if self._process is not None:
            _end(self._process, kill=True)

    def stop(self) -> None:
        """SIGTERM: a clean shutdown."""
        if self._process is not None:
            _end(self._process, kill=False)

    def pause(self) -> None:
        """SIGSTOP: the namespaces hang (connections stay open, nothing answers)."""
        if self._process is not None and self._process.poll() is None:
            self._process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """SIGCONT: they answer again."""
        if self._process is not None and self._process.poll() is None:
            self._process.send_signal(signal.SIGCONT)


def _spawn(
    python: str | os.PathLike[str], arguments: list[str], log: IO[bytes]
) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [os.fspath(python), "-m", EMULATOR.module(), *arguments],
        env={**os.environ, **child_environment()},
        stdout=subprocess.PIPE,
        stderr=log,
        bufsize=0,
    )


def _end(process: subprocess.Popen[bytes], *, kill: bool) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGCONT)  # a paused process would not see SIGTERM
        if kill:
            process.kill()
        else:
            process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    if process.stdout is not None:
        process.stdout.close()


def _read_settings(
    process: subprocess.Popen[bytes], log: IO[bytes], timeout: float
) -> dict[str, str]:
    """The ``export NAME='VALUE'`` or ``NAME<TAB>VALUE`` lines up to the running line."""
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
                elif "\t" in line:
                    name, _, value = line.partition("\t")
                    settings[name] = value.strip()
                elif line.startswith("#") and settings:
                    return settings  # the emulator's "running" line follows the settings
    log.flush()
    log.seek(0)
    output = log.read().decode(errors="replace").strip().splitlines()[-10:]
    raise EmulatorStartError("the emulator did not start: " + " | ".join(output))


__all__ = ["SECTIONS", "EmulatorProcess", "EmulatorStartError", "emulator_process"]

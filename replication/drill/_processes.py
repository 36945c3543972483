"""The processes of a drill: one emulator per namespace, Azurite, and the replicator.

Each namespace of the topology is served by its own emulator process
(:class:`~replication.hosts.local.EmulatorProcess`) with a data directory (the emulator saves a
message before it acknowledges it, so a killed namespace keeps what it accepted), so that the
drill can kill one with SIGKILL and start it again on the same port. Azurite (its
``azurite-blob`` command: :func:`azurite_command`) holds the binding documents, the
consumers' logs and the checkpoints; ``python -m replication run`` replicates, as a user runs
it. Every wait is bounded. :func:`drill_site` starts all three: the
:class:`~replication.drill._drill.DrillSite` of ``python -m replication drill``.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, TextIO

from replication.exceptions import DrillSetupError, MissingProgramError
from replication.hosts.local import SECTIONS, EmulatorProcess, EmulatorStartError
from replication.layout import CHECKOUT_ROOT, child_environment
from replication.render.emulator_config import emulator_config
from replication.topology import Topology

START_TIMEOUT = 60.0
"""How long an emulator or Azurite may take to listen before the drill gives up: a deadline for
failing, never waited out when the process starts (the emulator's own default, 60 s; a loaded
2-core machine took more than 30 s to import and start one)."""
AZURITE_SETTING = "REPLICATION_AZURITE"
"""Names the ``azurite-blob`` command to run, where it is neither on ``PATH`` nor in a
checkout's ``node_modules``."""
# Azurite's documented development account (public, the same on every machine).
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)


def _end(process: subprocess.Popen[bytes] | None, sig: signal.Signals) -> None:
    if process is None or process.poll() is not None:
        return
    process.send_signal(signal.SIGCONT)
    process.send_signal(sig)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class NamespaceProcess:
    """One namespace served by its own emulator process (:class:`EmulatorProcess`), killable
    and restartable on the same port with what it acknowledged."""

    def __init__(self, name: str, section: Mapping[str, Any], workdir: Path) -> None:
        self.name = name
        directory = workdir / name
        self._process = EmulatorProcess(
            {"UserConfig": {**section, "Logging": {"Type": "Console"}}},
            directory,
            data_dir=directory / "data",
            startup_timeout=START_TIMEOUT,
        )

    @property
    def connection_string(self) -> str:
        return self._process.connections[self.name]

    def start(self) -> None:
        try:
            self._process.start()
        except EmulatorStartError as error:
            raise DrillSetupError(f"the emulator of {self.name}: {error}") from error

    def kill(self) -> None:
        """SIGKILL: the namespace crashes; what it acknowledged survives in its data dir."""
        self._process.kill()

    def freeze(self) -> None:
        """SIGSTOP: the namespace hangs (connections open, nothing answers)."""
        self._process.pause()

    def thaw(self) -> None:
        """SIGCONT: it answers again, with everything it had."""
        self._process.resume()

    def stop(self) -> None:
        self._process.stop()


def namespace_processes(topology: Topology, workdir: Path) -> dict[str, NamespaceProcess]:
    """One (not yet started) emulator process per namespace of ``topology``."""
    config = emulator_config(topology)["UserConfig"]
    processes: dict[str, NamespaceProcess] = {}
    for key in SECTIONS:
        for namespace in config.get(key, []):
            processes[namespace["Name"]] = NamespaceProcess(
                namespace["Name"], {key: [namespace]}, workdir
            )
    return processes


def azurite_command() -> str:
    """Azurite's blob service command: ``$REPLICATION_AZURITE``, else a checkout's
    ``node_modules/.bin/azurite-blob`` (``npm ci``, as ``./dev.sh`` runs it), else
    ``azurite-blob`` on ``PATH`` (``npm install -g azurite``).

    Raises:
        MissingProgramError: none of them exists; the message says how to install it (a
            missing prerequisite, exit code 2, like a missing extra).
    """
    configured = os.environ.get(AZURITE_SETTING)
    if configured:
        if shutil.which(configured) is None:
            raise MissingProgramError(f"{AZURITE_SETTING}={configured}: no such command")
        return configured
    checkout = CHECKOUT_ROOT / "node_modules" / ".bin" / "azurite-blob"
    if checkout.exists():
        return str(checkout)
    found = shutil.which("azurite-blob")
    if found is None:
        raise MissingProgramError(
            "Azurite is needed for the failover binding store and is not installed: "
            "npm install -g azurite (Node.js 18+), or set "
            f"{AZURITE_SETTING} to its azurite-blob command"
        )
    return found


class AzuriteProcess:
    """A running Azurite blob service: its connection string, and a way to make it hang."""

    def __init__(self, process: subprocess.Popen[bytes], connection_string: str) -> None:
        self._process = process
        self.connection_string = connection_string

    def freeze(self) -> None:
        """SIGSTOP: the storage hangs (connections open, no request answered)."""
        if self._process.poll() is None:
            self._process.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        """SIGCONT: it answers again."""
        if self._process.poll() is None:
            self._process.send_signal(signal.SIGCONT)


@contextlib.contextmanager
def azurite(workdir: Path) -> Iterator[str]:
    """Azurite's blob service on a free port until the block exits; yields its connection
    string."""
    with azurite_process(workdir) as running:
        yield running.connection_string


@contextlib.contextmanager
def azurite_process(workdir: Path) -> Iterator[AzuriteProcess]:
    """:func:`azurite`, yielding the process (to freeze it).

    Azurite picks its own free port (``--blobPort 0``) and prints it once it listens: a port
    chosen here could be taken by another program before Azurite binds it, and a port that
    accepts connections may then be that other program's. It runs without Azurite's telemetry
    (``--disableTelemetry``, Azurite 3.34 and later; an older Azurite, which sends none, is
    started without the option).
    """
    location = workdir / "azurite"
    location.mkdir(parents=True, exist_ok=True)
    process, port = _start_azurite(location, workdir / "azurite.log")
    try:
        yield AzuriteProcess(
            process,
            f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};"
            f"AccountKey={AZURITE_KEY};BlobEndpoint=http://127.0.0.1:{port}/{AZURITE_ACCOUNT};",
        )
    finally:
        _end(process, signal.SIGTERM)


AZURITE_LISTENING = re.compile(rb"successfully listens on http://127\.0\.0\.1:(\d+)")
"""The line Azurite prints once its blob service listens (Azurite 3.x, ``--silent`` too)."""


def _start_azurite(location: Path, log: Path) -> tuple[subprocess.Popen[bytes], int]:
    """Start Azurite's blob service and wait until it prints its port: the process and port.

    Raises:
        DrillSetupError: it ended, or printed no port within ``START_TIMEOUT``.
    """
    options = ["--disableTelemetry"]
    while True:
        since = log.stat().st_size if log.exists() else 0
        with log.open("ab") as output:
            process = subprocess.Popen(
                [
                    azurite_command(),
                    "--silent",
                    *options,
                    "--skipApiVersionCheck",
                    "--blobHost",
                    "127.0.0.1",
                    "--blobPort",
                    "0",
                    "--location",
                    str(location),
                ],
                stdout=output,
                stderr=output,
            )
        try:
            listening, printed = await_output(
                process, log, since, AZURITE_LISTENING, timeout=START_TIMEOUT
            )
        except TimeoutError as error:
            raise DrillSetupError(f"Azurite did not start: {error}") from None
        if listening is not None:
            return process, int(listening.group(1))
        if options and '"disableTelemetry" is unknown' in printed:
            options = []  # an Azurite before 3.34: no telemetry, and no option to turn it off
            continue
        raise DrillSetupError(f"Azurite did not start: {printed[-2000:]}")


def await_output(
    process: subprocess.Popen[bytes],
    log: Path,
    since: int,
    pattern: re.Pattern[bytes],
    *,
    timeout: float,
) -> tuple[re.Match[bytes] | None, str]:
    """Wait until what ``process`` wrote to ``log`` after its first ``since`` bytes matches
    ``pattern`` (the line a server prints once it listens: a port that accepts connections may
    be another program's). Returns the match, None when the process ended without printing it,
    and what it printed.

    Raises:
        TimeoutError: neither within ``timeout`` seconds (the process is killed; the message
            ends with what it printed).
    """
    deadline = time.monotonic() + timeout
    while True:
        with log.open("rb") as output:
            output.seek(since)
            printed = output.read()
        found = pattern.search(printed)
        if found is not None or process.poll() is not None:
            return found, printed.decode(errors="replace")
        if time.monotonic() > deadline:
            _end(process, signal.SIGKILL)
            tail = printed.decode(errors="replace")[-2000:]
            raise TimeoutError(f"not ready within {timeout:g} s:\n{tail}")
        time.sleep(0.1)


@contextlib.contextmanager
def replicator(
    topology_path: Path, environ: Mapping[str, str], log: Path, transforms: str | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """``python -m replication run`` against the drill's namespaces until the block exits
    (``transforms``: its ``--transforms MODULE:NAME``, for transforms registered in code)."""
    command = [sys.executable, "-m", "replication", "run", "--topology", str(topology_path)]
    if transforms:
        command += ["--transforms", transforms]
    with log.open("ab") as output:
        process = subprocess.Popen(
            command,
            env={**os.environ, **environ, **child_environment()},
            stdout=output,
            stderr=output,
        )
    try:
        yield process
    finally:
        _end(process, signal.SIGTERM)


class ProcessSite:
    """The drill's namespaces as processes of their own (see :func:`drill_site`)."""

    def __init__(
        self,
        nodes: Mapping[str, NamespaceProcess],
        environ: Mapping[str, str],
        progress: TextIO | None,
        store: AzuriteProcess | None = None,
    ) -> None:
        self._nodes = dict(nodes)
        self._environ = dict(environ)
        self._progress = progress
        self._store = store
        self._started = time.monotonic()

    @property
    def environ(self) -> Mapping[str, str]:
        return self._environ

    def kill(self, namespace: str) -> None:
        self._nodes[namespace].kill()

    def restart(self, namespace: str) -> None:
        self._nodes[namespace].start()

    def freeze(self, namespace: str) -> None:
        self._nodes[namespace].freeze()

    def thaw(self, namespace: str) -> None:
        self._nodes[namespace].thaw()

    def freeze_store(self) -> None:
        if self._store is not None:
            self._store.freeze()

    def thaw_store(self) -> None:
        if self._store is not None:
            self._store.thaw()

    def say(self, text: str) -> None:
        if self._progress is not None:
            print(f"[{time.monotonic() - self._started:6.1f} s] {text}", file=self._progress)
            self._progress.flush()


@contextlib.contextmanager
def drill_site(
    topology_path: Path,
    topology: Topology,
    workdir: Path,
    progress: TextIO | None,
    transforms: str | None = None,
) -> Iterator[ProcessSite]:
    """One emulator process per namespace of ``topology``, Azurite and the replicator of
    ``topology_path`` (with ``--transforms transforms`` when given), until the block exits."""
    with contextlib.ExitStack() as stack:
        nodes = namespace_processes(topology, workdir)
        for node in nodes.values():
            node.start()
            stack.callback(node.stop)
        store = stack.enter_context(azurite_process(workdir))
        storage = store.connection_string
        environ = {
            **{topology.namespace(n).connection: p.connection_string for n, p in nodes.items()},
            "AzureWebJobsStorage": storage,
            "REPLICATION_FAILOVER_STORAGE": storage,
        }
        log = workdir / "replicator.log"
        stack.enter_context(replicator(topology_path, environ, log, transforms))
        site = ProcessSite(nodes, environ, progress, store)
        site.say(f"{len(nodes)} namespaces, Azurite and the replicator started")
        yield site


__all__ = [
    "AzuriteProcess",
    "DrillSetupError",
    "NamespaceProcess",
    "ProcessSite",
    "await_output",
    "azurite",
    "azurite_process",
    "drill_site",
    "namespace_processes",
    "replicator",
]

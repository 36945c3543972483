"""A local Service Bus emulator that the unmodified Azure SDKs talk to over AMQP 1.0.

    with run_emulator("config.json") as emulator:
        connection = emulator.connection_string("weu")

See emulator/README.md for what is supported.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from replication.exceptions import ConfigurationError
from replication.topology import Topology

from ._config import load_config
from ._namespaces import namespace_handlers
from ._persistence import Persistence
from ._server import EmulatorLoop, NamespaceServer

logger = logging.getLogger(__name__)


class RunningEmulator:
    """The handle ``run_emulator`` yields: connection strings by namespace name."""

    def __init__(self, servers: list[NamespaceServer]) -> None:
        self._servers = {server.name: server for server in servers}

    @property
    def namespaces(self) -> list[str]:
        return list(self._servers)

    def connection_string(self, namespace: str) -> str:
        return self._servers[namespace].connection_string()

    def port(self, namespace: str) -> int:
        return self._servers[namespace].port

    def app_settings(self, topology: Topology) -> dict[str, str]:
        """Setting name -> connection string: what points the topology's namespaces (whose
        config this emulator serves) at it, as ``python -m replication run`` reads them."""
        return {
            namespace.connection: self.connection_string(namespace.name)
            for namespace in topology.namespaces
        }


@contextlib.contextmanager
def run_emulator(
    config: str | Path | dict[str, Any],
    *,
    host: str = "127.0.0.1",
    data_dir: str | Path | None = None,
) -> Iterator[RunningEmulator]:
    """Serve every namespace of ``config`` in a background thread until the block exits.

    With ``data_dir``, each namespace's messages and events are restored from and saved to
    ``data_dir/<namespace>.json`` (see ``emulator._persistence`` for what survives a crash).
    """
    document = load_config(config)
    try:
        namespaces = namespace_handlers(document)
    except ConfigurationError as error:
        if error.source is None and not isinstance(config, dict):
            raise ConfigurationError(
                error.detail, source=str(config), location=error.location
            ) from None
        raise
    persistence: dict[str, Persistence] = {}
    if data_dir is not None:
        directory = Path(data_dir)
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            problem = "exists and is not a directory" if directory.exists() else error.strerror
            raise ConfigurationError(f"--data-dir {directory}: {problem}") from None
        for name, handler, _ in namespaces:
            persistence[name] = Persistence(directory, name, handler)
            if persistence[name].load():
                logger.info("namespace %s restored from %s", name, persistence[name].path)
    servers: list[NamespaceServer] = []
    try:
        for name, handler, port in namespaces:
            try:
                servers.append(NamespaceServer(name, handler, host, port))
            except OSError as error:
                raise OSError(
                    error.errno, f"namespace {name!r} on {host}:{port}: {error.strerror}"
                ) from error
    except OSError:
        for server in servers:  # nothing half-started: a taken port frees the others
            server.listener.close()
        raise
    for server in servers:
        server.persistence = persistence.get(server.name)
    loop = EmulatorLoop(servers)
    thread = threading.Thread(target=loop.run, name="emulator", daemon=True)
    thread.start()
    try:
        yield RunningEmulator(servers)
    finally:
        loop.stopping.set()
        thread.join(timeout=10)


__all__ = ["RunningEmulator", "load_config", "run_emulator"]

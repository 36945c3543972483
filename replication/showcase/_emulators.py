"""One emulator process for every scenario, plus one per namespace a scenario kills.

Starting an emulator costs a Python interpreter and python-qpid-proton (about a second of CPU)
and each serves its namespaces from one event loop, so the showcase serves all its scenarios'
namespaces from **one** process, each namespace on its own port under the name
``<scenario>-<namespace>`` (two scenarios' ``weu`` must not meet). A scenario sees its own
logical names only: its app settings map each namespace's ``connection`` setting to the
connection string of its renamed namespace, exactly as ``python -m emulator --topology`` would.

A namespace a scenario kills and restarts (``Scenario.isolated``) gets a process of its own with
``--data-dir``, so a SIGKILL takes down that namespace only and what it acknowledged survives.
Each run starts it empty: what an earlier run in the same folder left in its data directory is
removed first (its duplicate detection history would drop the new run's replicas, which carry
the same MessageIds).
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

from replication.hosts.local import EmulatorProcess
from replication.render.emulator_config import namespaces_config
from replication.topology import NamespaceSpec, Topology, materialize


def emulator_name(scenario: str, namespace: str) -> str:
    return f"{scenario}-{namespace}"


class ShowcaseEmulators:
    """The emulator processes of a set of scenarios (``{name: (topology, isolated)}``)."""

    def __init__(
        self, scenarios: Mapping[str, tuple[Topology, tuple[str, ...]]], workdir: Path
    ) -> None:
        self._topologies = {name: topology for name, (topology, _) in scenarios.items()}
        shared: list[tuple[str, NamespaceSpec]] = []
        self._isolated: dict[tuple[str, str], EmulatorProcess] = {}
        for name, (topology, isolated) in scenarios.items():
            for namespace in materialize(topology).namespaces:
                full = emulator_name(name, namespace.name)
                if namespace.name in isolated:
                    data = workdir / full / "data"
                    shutil.rmtree(data, ignore_errors=True)
                    self._isolated[(name, namespace.name)] = EmulatorProcess(
                        namespaces_config([(full, namespace)]), workdir / full, data_dir=data
                    )
                else:
                    shared.append((full, namespace))
        self._shared = (
            EmulatorProcess(namespaces_config(shared), workdir / "shared") if shared else None
        )
        self._connections: dict[str, str] = {}

    def start(self) -> None:
        for process in [self._shared, *self._isolated.values()]:
            if process is not None:
                self._connections.update(process.start())

    def settings(self, scenario: str) -> dict[str, str]:
        """The app settings that point ``scenario``'s topology at its namespaces."""
        return {
            namespace.connection: self._connections[emulator_name(scenario, namespace.name)]
            for namespace in self._topologies[scenario].namespaces
        }

    def process(self, scenario: str, namespace: str) -> EmulatorProcess:
        """The process of an isolated namespace (KeyError for a shared one)."""
        return self._isolated[(scenario, namespace)]

    def stop(self) -> None:
        for process in [*self._isolated.values(), self._shared]:
            if process is not None:
                process.stop()

    def __enter__(self) -> ShowcaseEmulators:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()


__all__ = ["ShowcaseEmulators", "emulator_name"]

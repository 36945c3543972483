"""The topology document as a whole, with lookups by name and the tasks resolved at load."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

from pydantic import Field, PrivateAttr

from replication.rules import SpecModel

from ._monitoring import MonitoringSpec
from ._specs import HeartbeatSpec, NamespaceSpec
from ._tasks import ResolvedTask, TaskSpec


class Topology(SpecModel):
    """The validated topology document. Load it with :func:`load_topology`.

    After loading, ``tasks`` are the tasks that *run*, one function and one local-host loop
    each: the file's tasks in file order, except that a fan-out task with several targets is
    replaced, in place, by its lanes (one per target, see :mod:`._lanes`), and a Service Bus
    task without ``deadLetterTarget`` has the default parking queue filled in.
    :meth:`lanes` finds the tasks a file task runs as; :meth:`task_groups` lists them per file
    task, for anything that reports JSON paths of the file.
    """

    schema_: str | None = Field(default=None, alias="$schema")
    """the JSON Schema editors check the file with (`replication schema`); ignored here"""
    namespaces: Annotated[list[NamespaceSpec], Field(min_length=1)]
    """the namespaces, one per region and service"""
    tasks: list[TaskSpec] = Field(default_factory=list)
    """the replication tasks"""
    heartbeats: HeartbeatSpec = Field(default_factory=HeartbeatSpec)
    """heartbeats along every replication path (off by default)"""
    monitoring: MonitoringSpec = Field(default_factory=MonitoringSpec)
    """alert thresholds for the deployed alerts and for `status`"""
    _resolved: dict[str, ResolvedTask] | None = PrivateAttr(default=None)

    @property
    def connections(self) -> list[str]:
        """The namespaces' ``connection`` setting prefixes, in file order: the per-namespace
        app settings :meth:`replication.settings.Settings.from_environ` reads."""
        return [namespace.connection for namespace in self.namespaces]

    def namespace(self, name: str) -> NamespaceSpec:
        """The namespace with logical name ``name`` (KeyError when absent)."""
        for namespace in self.namespaces:
            if namespace.name == name:
                return namespace
        raise KeyError(name)

    def task(self, name: str) -> TaskSpec:
        """The task named ``name`` (KeyError when absent): a lane by its own name; a task the
        file names but that runs as lanes is found with :meth:`lanes`."""
        for task in self.tasks:
            if task.name == name:
                return task
        raise KeyError(name)

    def default_max_hops(self) -> int:
        """A message never needs more hops than there are other namespaces."""
        return max(1, len(self.namespaces) - 1)

    def max_hops(self, task: TaskSpec) -> int:
        """The task's hop limit, defaulting to :meth:`default_max_hops`."""
        return task.max_hops if task.max_hops is not None else self.default_max_hops()

    def resolved(self, task: TaskSpec | str) -> ResolvedTask:
        """The task with its pattern and typed options, validated once when it was loaded.

        Raises:
            KeyError: no such task.
            ValueError: this topology was not built by ``parse_topology`` / ``load_topology``,
                which resolve every task.
        """
        if self._resolved is None:
            raise ValueError("tasks are resolved by parse_topology() / load_topology()")
        return self._resolved[task if isinstance(task, str) else task.name]

    def resolved_tasks(self) -> list[ResolvedTask]:
        """Every task, resolved, in file order."""
        return [self.resolved(task) for task in self.tasks]

    def lanes(self, name: str) -> list[ResolvedTask]:
        """The tasks the file's task ``name`` runs as: its lanes when it was split (see
        :mod:`._lanes`), else the task itself (KeyError when the file has no such task)."""
        for file_name, running in self.task_groups():
            if file_name == name:
                return running
        raise KeyError(name)

    def task_groups(self) -> list[tuple[str, list[ResolvedTask]]]:
        """Each task of the file, in file order (its index is the ``tasks[i]`` of the file),
        with the tasks it runs as."""
        groups: dict[str, list[ResolvedTask]] = {}
        for task in self.resolved_tasks():
            groups.setdefault(task.lane_of or task.name, []).append(task)
        return list(groups.items())

    def with_resolved(self, resolved: Mapping[str, ResolvedTask]) -> Topology:
        """This topology with its resolved tasks attached (the loader's last step)."""
        copy = self.model_copy()
        copy._resolved = dict(resolved)
        return copy


__all__ = ["Topology"]

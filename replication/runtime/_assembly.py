"""A task's runner as the hosts and ``redrive`` use it: built from the topology and a sender
source, outside the SDK layer.

:func:`runner_for` gives the runner its senders (created on their first send, so that nothing
connects while the Function app is indexed), the task's retry policy within its attempt budget
(:func:`replication.topology.attempt_budget`), its telemetry (:func:`task_telemetry`) and its
source's kind. Where the senders come from is the caller's: the SDK senders of
:class:`replication.transport.senders.SenderFactory` in the hosts, anything with a
``sender(namespace, entity)`` method elsewhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import TracerProvider

from replication.envelope import Envelope, PropertyUpdate
from replication.planning import Target
from replication.settings import Settings
from replication.telemetry import TaskTelemetry
from replication.topology import ResolvedTask, Topology, attempt_budget

from ._backoff import RetryPolicy
from ._delivery import TargetSender
from ._runner import TaskRunner


class SenderSource(Protocol):
    """Where a runner's senders come from: one (cached) sender per ``namespace/entity``."""

    def sender(self, namespace: str, entity: str) -> TargetSender: ...


class LazySender:
    """A target whose sender is asked of its source on the first send (not when the app is
    indexed)."""

    def __init__(self, source: SenderSource, target: Target) -> None:
        self._source = source
        self._target = target

    def send(
        self,
        envelopes: Sequence[Envelope],
        *,
        timeout: float | None = None,
        update: PropertyUpdate | None = None,
    ) -> None:
        sender = self._source.sender(self._target.namespace, self._target.entity)
        sender.send(envelopes, timeout=timeout, update=update)


def task_telemetry(
    topology: Topology,
    task: ResolvedTask,
    *,
    enabled: bool,
    lag_per_replica: bool = False,
    meter_provider: MeterProvider | None = None,
    tracer_provider: TracerProvider | None = None,
) -> TaskTelemetry:
    """The task's instruments, with each namespace's ``messaging.system``. Providers default
    to the global ones."""
    source = task.spec.source
    return TaskTelemetry(
        task.name,
        source_namespace=source.namespace,
        source_entity=source.entity,
        subscription=source.subscription,
        consumer_group=source.consumer_group,
        systems={ns.name: str(ns.kind) for ns in topology.namespaces},
        enabled=enabled,
        lag_per_replica=lag_per_replica,
        meter_provider=meter_provider,
        tracer_provider=tracer_provider,
    )


def runner_for(
    topology: Topology,
    task: ResolvedTask,
    senders: SenderSource,
    *,
    settings: Settings,
    bound_sends: bool = True,
) -> TaskRunner:
    """The task's runner, with senders for its targets and dead-letter target that connect on
    their first send; telemetry off when ``settings`` say so (``bound_sends``: see
    :class:`RetryPolicy`)."""
    targets: dict[Target, TargetSender] = {
        target: LazySender(senders, target) for target in task.context.targets
    }
    parking = task.spec.dead_letter_target
    dead_letter = (
        LazySender(senders, Target(parking.namespace, parking.entity)) if parking else None
    )
    budget = attempt_budget(topology, task.spec)
    retry = RetryPolicy.from_task(task, budget, bound_sends=bound_sends)
    return TaskRunner(
        task,
        targets,
        dead_letter,
        retry=retry,
        telemetry=task_telemetry(
            topology,
            task,
            enabled=settings.telemetry_enabled,
            lag_per_replica=settings.lag_per_replica,
        ),
        source_kind=topology.namespace(task.spec.source.namespace).kind,
    )


__all__ = ["LazySender", "SenderSource", "runner_for", "task_telemetry"]

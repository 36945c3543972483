"""A capacity plan before deployment: what a topology costs each namespace at a given rate.

``python -m replication plan --rate 100,2048`` answers "will Standard do, and how many
throughput units do we buy?" before anything is deployed. Applications are assumed to publish
``rate`` messages per second of ``size`` bytes into every entity a task reads; the walk in
:mod:`._traffic` follows one such message through every task's pattern, loop prevention and
the brokers' subscription rules, and counts, per namespace and entity, the sends, filter
evaluations and receives it causes, replication subscriptions and heartbeats included. Those
are set against the tier's limits (:mod:`._limits`, with Microsoft's pages):

- Service Bus Basic / Standard: credits per second (send, receive and filter evaluation one
  credit each) against 1,000, and the rate at which the namespace starts to throttle;
- Event Hubs Basic / Standard: the throughput units needed for the events and bytes in and out;
- Premium (both services): the operations only, because Microsoft publishes no per-unit rate.

The figures are linear in the rate except heartbeats, which are fixed; they count no
management operations, lock renewals or settlements (Service Bus charges no credit for a
completion), and assume every subscription and consumer group is read.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter

from replication.exceptions import ConfigurationError
from replication.topology import NamespaceKind, Topology

from ._limits import (
    EVENTHUBS_LIMIT_SOURCE,
    MAX_THROUGHPUT_UNITS,
    SERVICEBUS_CREDITS_PER_SECOND,
    SERVICEBUS_LIMIT_SOURCE,
    throughput_units,
)
from ._traffic import EntityTraffic, measure_traffic

DEFAULT_MESSAGE_BYTES = 1024


@dataclasses.dataclass(frozen=True)
class Rate:
    """Messages per second published into every source entity, and their size in bytes."""

    messages_per_second: float
    message_bytes: int = DEFAULT_MESSAGE_BYTES

    @classmethod
    def parse(cls, text: str) -> Rate:
        """``MSG_PER_S`` or ``MSG_PER_S,SIZE`` (bytes), e.g. ``250`` or ``250,4096``."""
        rate, _, size = text.partition(",")
        try:
            messages = float(rate)
            size_bytes = int(size) if size else DEFAULT_MESSAGE_BYTES
        except ValueError:
            raise ConfigurationError(
                f"--rate {text!r}: expected MSG_PER_S[,SIZE], e.g. 100 or 100,2048"
            ) from None
        if not (messages > 0 and math.isfinite(messages)) or size_bytes <= 0:
            raise ConfigurationError(f"--rate {text!r}: the rate and the size must be positive")
        return cls(messages, size_bytes)


@dataclasses.dataclass(frozen=True)
class NamespaceLoad:
    """One namespace's operations per second at the plan's rate, and what its tier says."""

    name: str
    kind: NamespaceKind
    sku: str
    entities: dict[str, EntityTraffic]
    credits: float | None
    """Service Bus Basic/Standard: credits per second needed; None otherwise."""
    throttles_above: float | None
    """Service Bus Basic/Standard: the publish rate (msg/s) above which it runs out of credits;
    None when the topology costs it nothing per message."""
    throughput_units: int | None
    """Event Hubs Basic/Standard: throughput units needed; None otherwise."""

    @property
    def total(self) -> EntityTraffic:
        total = EntityTraffic()
        for traffic in self.entities.values():
            total = total.plus(traffic)
        return total

    @property
    def runs_out(self) -> bool:
        """True when the tier cannot carry this load."""
        if self.credits is not None:
            return self.credits > SERVICEBUS_CREDITS_PER_SECOND
        if self.throughput_units is not None:
            return self.throughput_units > MAX_THROUGHPUT_UNITS
        return False


@dataclasses.dataclass(frozen=True)
class CapacityPlan:
    """The loads of every namespace that has any, in topology order, and what each task did
    with the sample message."""

    rate: Rate
    namespaces: list[NamespaceLoad]
    task_outcomes: dict[str, Counter[str]]
    loops: list[str]
    heartbeat_interval: float | None


def _credits(traffic: EntityTraffic) -> float:
    return traffic.sends + traffic.filter_evaluations + traffic.receives


def capacity_plan(topology: Topology, rate: Rate) -> CapacityPlan:
    """The capacity plan of ``topology`` (a loaded one) at ``rate``."""
    traffic = measure_traffic(topology, rate.message_bytes)
    loads: list[NamespaceLoad] = []
    for namespace in topology.namespaces:
        entities: dict[str, EntityTraffic] = {}
        unit = fixed = EntityTraffic()
        for (owner, entity), per_message in traffic.per_message.items():
            if owner == namespace.name:
                entities[entity] = per_message.scaled(rate.messages_per_second)
                unit = unit.plus(per_message)
        for (owner, entity), constant in traffic.fixed.items():
            if owner == namespace.name:
                entities[entity] = entities.get(entity, EntityTraffic()).plus(constant)
                fixed = fixed.plus(constant)
        if not entities:
            continue
        credits = throttles = units = None
        if namespace.sku != "Premium" and namespace.kind is NamespaceKind.SERVICEBUS:
            credits = _credits(unit) * rate.messages_per_second + _credits(fixed)
            if _credits(unit) > 0:
                throttles = (SERVICEBUS_CREDITS_PER_SECOND - _credits(fixed)) / _credits(unit)
        elif namespace.sku != "Premium":
            total = unit.scaled(rate.messages_per_second).plus(fixed)
            units = throughput_units(
                total.sends, total.ingress_bytes, total.receives, total.egress_bytes
            )
        loads.append(
            NamespaceLoad(
                namespace.name, namespace.kind, namespace.sku, entities, credits, throttles, units
            )
        )
    interval = topology.heartbeats.interval.total_seconds() if topology.heartbeats.enabled else None
    return CapacityPlan(rate, loads, traffic.task_outcomes, traffic.loops, interval)


def _megabytes(value: float) -> str:
    return f"{value / 1_000_000:.2f}"


def render(plan: CapacityPlan) -> list[str]:
    """The plan as the lines ``plan --rate`` prints, warnings last."""
    rate = plan.rate
    heartbeats = (
        f", heartbeats every {plan.heartbeat_interval:g} s" if plan.heartbeat_interval else ""
    )
    lines = [
        f"capacity plan: {rate.messages_per_second:g} msg/s of {rate.message_bytes:,} B into "
        f"every entity a task reads{heartbeats}",
    ]
    warnings: list[str] = []
    for load in plan.namespaces:
        lines.append("")
        lines.append(f"{load.name} ({load.kind.value} {load.sku}): {_verdict(load)}")
        if load.kind is NamespaceKind.SERVICEBUS:
            cost = "credits/s" if load.credits is not None else "operations/s"
            header = ("sends/s", "filter evals/s", "receives/s", cost)
            rows = {
                name: (t.sends, t.filter_evaluations, t.receives, _credits(t))
                for name, t in load.entities.items()
            }
        else:
            header = ("in events/s", "in MB/s", "out events/s", "out MB/s")
            rows = {
                name: (t.sends, t.ingress_bytes / 1e6, t.receives, t.egress_bytes / 1e6)
                for name, t in load.entities.items()
            }
        width = max(len("entity"), *(len(name) for name in rows))
        lines.append("  " + "entity".ljust(width) + "".join(f"{h:>17}" for h in header))
        for name, values in rows.items():
            lines.append("  " + name.ljust(width) + "".join(f"{v:>17,.2f}" for v in values))
        if load.runs_out:
            warnings.append(f"warning: {load.name}: {_shortfall(load)}")
    for task, outcomes in plan.task_outcomes.items():
        if "forward" not in outcomes:
            what = ", ".join(f"{count} {kind}" for kind, count in outcomes.items())
            warnings.append(
                f"note: task {task} forwarded nothing of the sample message ({what}): its "
                "targets get no traffic from it in this plan"
            )
    for loop in plan.loops:
        warnings.append(f"warning: loop: {loop}")
    if warnings:
        lines.append("")
        lines.extend(warnings)
    lines.append("")
    lines.append(f"limits: {SERVICEBUS_LIMIT_SOURCE} and {EVENTHUBS_LIMIT_SOURCE}")
    return lines


def _verdict(load: NamespaceLoad) -> str:
    if load.credits is not None:
        share = load.credits / SERVICEBUS_CREDITS_PER_SECOND
        above = (
            f"; throttles above {load.throttles_above:,.1f} msg/s"
            if load.throttles_above is not None
            else ""
        )
        return (
            f"{load.credits:,.1f} credits/s of {SERVICEBUS_CREDITS_PER_SECOND:,} "
            f"({share:.0%}){above}"
        )
    total = load.total
    if load.throughput_units is not None:
        plural = "s" if load.throughput_units != 1 else ""
        return (
            f"needs {load.throughput_units} throughput unit{plural} (in {total.sends:,.1f} "
            f"events/s, {_megabytes(total.ingress_bytes)} MB/s; out {total.receives:,.1f} "
            f"events/s, {_megabytes(total.egress_bytes)} MB/s)"
        )
    operations = total.sends + total.filter_evaluations + total.receives
    return (
        f"{operations:,.1f} operations/s; Premium is throttled on CPU and memory and Microsoft "
        "publishes no rate per unit: load-test it and watch the namespace's CPU metric"
    )


def _shortfall(load: NamespaceLoad) -> str:
    if load.credits is not None:
        above = load.throttles_above
        at = f" (above {above:,.1f} msg/s)" if above is not None and above > 0 else ""
        return (
            f"needs {load.credits:,.1f} credits/s; {load.sku} will throttle at "
            f"{SERVICEBUS_CREDITS_PER_SECOND:,}{at}: lower the rate, split the namespace or use "
            "Premium"
        )
    return (
        f"needs {load.throughput_units} throughput units; {load.sku} takes at most "
        f"{MAX_THROUGHPUT_UNITS} (ask for more, or use Premium or Dedicated)"
    )


__all__ = [
    "DEFAULT_MESSAGE_BYTES",
    "CapacityPlan",
    "NamespaceLoad",
    "Rate",
    "capacity_plan",
    "render",
]

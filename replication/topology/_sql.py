"""Every SQL expression of a topology, located in the file, for ``lint-rules``.

Rules written in the file carry their own JSON path; rules a task's pattern adds to the
subscription it reads carry the task's path (``tasks[0].pattern``); SQL conditions among a
pattern's options carry the option's path (``tasks[2].options.routes[0].condition``).
"""

from __future__ import annotations

from collections.abc import Iterator

from replication.rules import SqlText, rule_texts

from ._heartbeats import heartbeat_paths
from ._topology import Topology


def sql_texts(topology: Topology) -> Iterator[SqlText]:
    """The SQL filters, actions and pattern conditions of ``topology``."""
    for n, namespace in enumerate(topology.namespaces):
        for t, topic in enumerate(namespace.topics):
            for s, subscription in enumerate(topic.subscriptions):
                for r, rule in enumerate(subscription.rules):
                    base = f"namespaces[{n}].topics[{t}].subscriptions[{s}].rules[{r}]"
                    on = f"{namespace.name}/{topic.name}/Subscriptions/{subscription.name}"
                    yield from rule_texts(rule, f"{base}.filter.sql", f"{base}.action", on)
    # A task split into lanes has one pattern, rule and options for all of them: report once,
    # at the file's task.
    # Heartbeat tasks (added after the file's, see ._heartbeats) are reported at the section.
    generated = {path.task for path in heartbeat_paths(topology)}
    for i, (_, (task, *_lanes)) in enumerate(topology.task_groups()):
        derived = task.subscription_rule()
        if derived is not None:
            where = "heartbeats" if task.name in generated else f"tasks[{i}].pattern"
            yield from rule_texts(derived, where, where, task.spec.source.describe())
        for relative, expression in task.pattern.sql_conditions(task.options):
            yield SqlText(f"tasks[{i}].options.{relative}", task.name, "filter", expression)


__all__ = ["sql_texts"]

"""``python -m replication validate``: load the topology and print a summary, or the error with
file and JSON path (exit code 2)."""

from __future__ import annotations

import argparse

from replication.exit_codes import ExitCode
from replication.topology import sql_texts

from ._options import add_topology_option, topology_of


def configure(parser: argparse.ArgumentParser) -> None:
    add_topology_option(parser)


def run(args: argparse.Namespace) -> int:
    topology = topology_of(args)
    print(f"{args.topology}: valid")
    for namespace in topology.namespaces:
        entities = ", ".join(namespace.entity_names()) or "no entities"
        print(
            f"  namespace {namespace.name} ({namespace.kind.value}, {namespace.region}): {entities}"
        )
    for task in topology.tasks:
        targets = ", ".join(t.describe() for t in task.targets)
        lane = topology.resolved(task).lane_of
        of = f" (lane of {lane})" if lane else ""
        transform = f" (transform {task.transform.function})" if task.transform else ""
        print(
            f"  task {task.name}{of} [{task.pattern}]: {task.source.describe()} -> {targets}"
            f"{transform}"
        )
    for rule in sql_texts(topology):
        what = f"rule {rule.rule_name} on {rule.on}" if rule.on else f"task {rule.rule_name}"
        print(f"  {what} ({rule.where}): {rule.kind} {rule.expression}")
    return ExitCode.OK

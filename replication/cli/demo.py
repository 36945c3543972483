"""``python -m replication demo``: the whole product on one machine, without Docker or Azure.

Without ``--topology`` it runs the **showcase** (:mod:`replication.showcase`): every pattern,
one scenario each on the local emulator (an all-active mesh audited with Spark, active-passive
with a TTL on the replica, spillover from a failing consumer, a latency-optimizing hub,
validation with rejects, an Event Hubs stream into a queue, routing, consolidation, a
session-ordered pair and an outage), then one table of figures counted from what the emulator
holds. ``--only NAME`` runs one scenario.

With ``--topology FILE`` it runs that one topology:

1. start the local AMQP emulator with the topology's namespaces, as its own process, every
   Service Bus namespace captured (the file's ``capture`` sections, and the demo's own,
   :data:`~replication.showcase.DEMO_CAPTURE`, where a namespace has none: a capture
   subscription on every topic);
2. run every task with the local host (real SDK receivers and senders, as in Azure), and a
   capture task per captured topic writing to the folder ``OUTPUT/capture``, as a deployment's
   capture writes to Blob Storage;
3. publish ``--messages`` messages to every task's source entity, in every region, and wait
   until the regions go quiet (captures included);
4. run the Spark duplicate audit over the regions' captures and print its verdict.

Either way it exits non-zero when a message is lost or loops, so it doubles as a smoke test.
Needs the ``local`` and ``audit`` extras (the emulator and PySpark), Java 17+ for Spark and, for
the failover scenario, Azurite; ``./dev.sh demo`` installs them all in a checkout.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
from pathlib import Path
from typing import Any

from replication.envelope import Envelope
from replication.exceptions import ConfigurationError, ReplicationError
from replication.exit_codes import ExitCode
from replication.hosts.local import LocalHost
from replication.layout import child_environment
from replication.settings import Settings
from replication.showcase import (
    DEMO_CAPTURE,
    SCENARIOS,
    ShowcaseEmulators,
    audit_command,
    capture_folders,
    capture_settings,
    clear_captures,
    healthy,
    read_report,
    run_showcase,
    verdict_lines,
)
from replication.topology import Topology, capture_everywhere, capture_sources
from replication.transport.senders import SenderFactory

from ._options import positive_int, positive_seconds, topology_of


def _publish(topology: Topology, settings: Settings, count: int) -> int:
    factory = SenderFactory(topology, settings)
    # A dead-letter queue cannot be published to; its tasks have nothing to do in the demo.
    sources = dict.fromkeys(
        (task.source.namespace, task.source.entity)
        for task in topology.tasks
        if not task.source.dead_letter_queue
    )
    try:
        for namespace, entity in sources:
            batch = [
                Envelope(
                    body=json.dumps({"n": index}).encode(),
                    message_id=f"{namespace}-{entity}-{index:05d}",
                    content_type="application/json",
                    partition_key=str(index % 8),
                )
                for index in range(count)
            ]
            factory.sender(namespace, entity).send(batch)
            print(f"published {count:>5} messages to {namespace}/{entity}")
    finally:
        factory.close()
    return count * len(sources)


def _audit(topology: Topology, folders: dict[str, Path], output: Path) -> dict[str, Any]:
    command = audit_command(topology, folders, output)
    print("running   " + " ".join(command[1:]))
    subprocess.run(command, env={**os.environ, **child_environment()}, check=True)
    return read_report(output)


def _print_verdict(report: dict[str, Any], published: int, output: Path) -> int:
    print(
        f"\npublished {published} originals; the regions hold {report['total_records']} copies "
        f"of {report['unique_messages']} messages"
    )
    for line in verdict_lines(report):
        print(line)
    print(f"\nreport: {output / 'audit' / 'report.json'} and report.html beside it")
    ok = healthy(report)
    print("verdict: every message replicated once, no loops" if ok else "verdict: FAILED")
    return ExitCode.OK if ok else ExitCode.FINDINGS


def _run_topology(args: argparse.Namespace) -> int:
    topology = capture_everywhere(topology_of(args), DEMO_CAPTURE, args.topology)
    output = Path(args.output)
    folders = capture_folders(topology, output)
    if not folders:
        raise ReplicationError("the topology has no Service Bus topic to capture")
    clear_captures(output)
    emulators = ShowcaseEmulators({"demo": (topology, ())}, output / "emulator")
    with emulators:
        settings = {**emulators.settings("demo"), **capture_settings(output)}
        with LocalHost(topology, settings) as host:
            published = _publish(topology, host.settings, args.messages)
            if not host.wait_until_idle(idle_seconds=3, timeout=args.timeout, at_least=published):
                raise ReplicationError(f"replication still busy after {args.timeout} s")
            captures = {capture.name for capture in capture_sources(topology)}
            for name, status in host.status.items():
                verb = "captured  " if name in captures else "replicated"
                print(f"{verb} {status.messages:>5} messages ({name})")
    return _print_verdict(_audit(topology, folders, output), published, output)


def run(args: argparse.Namespace) -> int:
    if args.topology is not None:
        return _run_topology(args)
    if args.transforms is not None:
        raise ConfigurationError(
            "--transforms needs --topology: the showcase registers its own", source="arguments"
        )
    return run_showcase(
        only=args.only,
        output=Path(args.output),
        parallel=args.parallel,
        verbose=args.verbose,
    )


def configure(parser: argparse.ArgumentParser) -> None:
    chosen = parser.add_mutually_exclusive_group()
    chosen.add_argument(
        "--topology",
        metavar="FILE",
        help="run this one topology instead of the showcase (publish, replicate, Spark audit)",
    )
    chosen.add_argument(
        "--only",
        metavar="NAME",
        help="run one scenario of the showcase: " + ", ".join(s.name for s in SCENARIOS),
    )
    parser.add_argument(
        "--transforms",
        metavar="MODULE:NAME",
        help="with --topology: the Transforms registry the topology's registered transform "
        "names come from, as for run (an app made by init: app_transforms:transforms)",
    )
    parser.add_argument("--output", default="demo-output", help="capture and report folder")
    parser.add_argument(
        "--parallel",
        type=positive_int,
        metavar="N",
        help="showcase scenarios run side by side (default: all of them)",
    )
    parser.add_argument(
        "--messages",
        type=positive_int,
        default=200,
        help="with --topology: originals per source entity",
    )
    parser.add_argument(
        "--timeout",
        type=positive_seconds,
        default=300,
        help="with --topology: seconds to wait for quiet",
    )

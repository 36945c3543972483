"""``python -m replication demo``: the whole product on one machine, without Docker or Azure.

1. start the local AMQP emulator with the topology's namespaces, one port per region, as its own
   process (``python -m emulator --topology``, see :mod:`replication.hosts.local`);
2. run every task with the local host (real SDK receivers and senders, as in Azure);
3. publish ``--messages`` messages to every task's source entity, in every region, and wait
   until the regions go quiet;
4. drain every consumer subscription (one that no task reads from) and write what each region
   received as JSON lines, the input format of the Spark audit;
5. run the Spark duplicate audit over the regions and print its verdict.

It exits non-zero when the audit finds a lost message or a loop, so it doubles as a smoke test.
Needs the development requirements (the emulator and PySpark), which ``./dev.sh demo`` installs.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from replication.envelope import Envelope
from replication.exceptions import ReplicationError
from replication.exit_codes import ExitCode
from replication.hosts.local import LocalHost, emulator_process
from replication.properties import format_timestamp
from replication.settings import Settings
from replication.topology import NamespaceKind, Topology, load_topology
from replication.transport.receivers import drain_servicebus
from replication.transport.senders import SenderFactory

from ._options import add_topology_option

ROOT = Path(__file__).resolve().parents[2]


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


def _consumer_subscriptions(topology: Topology) -> list[tuple[str, str, str]]:
    """(namespace, topic, subscription) for every subscription no task reads from."""
    read = {(t.source.namespace, t.source.entity, t.source.subscription) for t in topology.tasks}
    return [
        (namespace.name, topic.name, subscription.name)
        for namespace in topology.namespaces
        if namespace.kind is NamespaceKind.SERVICEBUS
        for topic in namespace.topics
        for subscription in topic.subscriptions
        if (namespace.name, topic.name, subscription.name) not in read
    ]


def _capture_record(envelope: Envelope) -> dict[str, Any]:
    enqueued = envelope.enqueued_time_utc
    return {
        "message_id": envelope.message_id,
        "enqueued_time_utc": format_timestamp(enqueued) if enqueued else None,
        "sequence_number": envelope.sequence_number,
        "properties": {k: str(v) for k, v in envelope.application_properties.items()},
    }


def _capture(topology: Topology, settings: Settings, output: Path) -> dict[str, Path]:
    folders: dict[str, Path] = {}
    for namespace, topic, subscription in _consumer_subscriptions(topology):
        received = drain_servicebus(
            topology.namespace(namespace), topic, subscription, settings=settings
        )
        folder = folders.setdefault(namespace, output / "capture" / namespace)
        folder.mkdir(parents=True, exist_ok=True)
        lines = [json.dumps(_capture_record(envelope)) for envelope in received]
        (folder / f"{topic}-{subscription}.json").write_text("\n".join(lines) + "\n")
        print(f"captured  {len(received):>5} messages from {namespace}/{topic}/{subscription}")
    return folders


def _audit(topology: Topology, folders: dict[str, Path], output: Path) -> dict[str, Any]:
    expectations = sorted(
        {
            f"{task.source.namespace}:{target.namespace}"
            for task in topology.tasks
            for target in task.targets
            if target.namespace in folders and task.source.namespace in folders
        }
    )
    command = [sys.executable, "-m", "spark.dedup_audit", "--format", "json"]
    for region, folder in folders.items():
        command += ["--input", f"{region}={folder}"]
    for pair in expectations:
        command += ["--expect", pair]
    command += ["--watermark", "30 seconds", "--output", str(output / "audit")]
    print("running   " + " ".join(command[1:]))
    subprocess.run(command, cwd=ROOT, check=True)
    report: dict[str, Any] = json.loads((output / "audit" / "report.json").read_text())
    return report


def _print_verdict(report: dict[str, Any], published: int, output: Path) -> int:
    print(
        f"\npublished {published} originals; the regions hold {report['total_records']} copies "
        f"of {report['unique_messages']} messages"
    )
    for region, figures in report["regions"].items():
        print(
            f"  {region:<6} {figures['records']:>6} records, "
            f"{figures['in_region_duplicates']} duplicates, {figures['missing']} missing"
        )
    for pair, lag in sorted(report["lag_seconds"].items()):
        print(f"  lag {pair:<12} p50 {lag['p50']:.3f} s   p95 {lag['p95']:.3f} s")
    print(f"  loops {report['loops']}, missing {report['missing_total']}")
    print(f"\nreport: {output / 'audit' / 'report.json'} and report.html beside it")
    healthy = report["missing_total"] == 0 and report["loops"] == 0
    print("verdict: every message replicated once, no loops" if healthy else "verdict: FAILED")
    return ExitCode.OK if healthy else ExitCode.FINDINGS


def run(args: argparse.Namespace) -> int:
    topology = load_topology(args.topology)
    output = Path(args.output)
    with emulator_process(args.topology) as environ, LocalHost(topology, environ) as host:
        settings = host.settings
        published = _publish(topology, settings, args.messages)
        if not host.wait_until_idle(idle_seconds=3, timeout=args.timeout, at_least=published):
            raise ReplicationError(f"replication still busy after {args.timeout} s")
        print(f"replicated {sum(s.messages for s in host.stats.values())} messages")
        folders = _capture(topology, settings, output)
    if not folders:
        raise ReplicationError("the topology has no consumer subscription to capture from")
    return _print_verdict(_audit(topology, folders, output), published, output)


def configure(parser: argparse.ArgumentParser) -> None:
    add_topology_option(parser)
    parser.add_argument("--messages", type=int, default=200, help="originals per source entity")
    parser.add_argument("--output", default="demo-output", help="capture and report folder")
    parser.add_argument("--timeout", type=float, default=300, help="seconds to wait for quiet")

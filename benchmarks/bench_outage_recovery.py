"""How fast a backlog built up during a target outage drains after recovery, and what the outage
costs in deliveries and duplicates.

Run: ``.venv/bin/python benchmarks/bench_outage_recovery.py [--messages N] [--outage S]``.

Two Service Bus namespaces, each served by its own ``python -m emulator`` process with
``--data-dir`` (the fault suite's harness, ``tests/faults/harness.py``); the local host runs
the task ``weu-to-neu`` (5-second locks, so one invocation retries for 4 s). The target's
emulator is SIGKILLed, N messages are published to the source while it is down, it is started
again after S seconds, and the benchmark measures:

- ``drain``: seconds from the target's restart until all N replicas are at the target, and the
  rate that makes;
- ``steady``: the same N messages replicated with the target up, for comparison (same run);
- ``failures``: failed attempts during the outage (each ended an invocation's 4-second budget
  and cost one delivery), and the most the delivery budget would allow;
- ``duplicates``: copies at the target beyond one per MessageId (the target has no duplicate
  detection, so every re-send would show), and what is left in the source's dead-letter queue
  and the parking queue (both must be 0).
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from replication.hosts.local import LocalHost
from replication.topology import required_delivery_count
from tests.faults.harness import Cluster, eventually, message_ids, originals, topology_document


def _replicate(
    cluster: Cluster, count: int, prefix: str, *, outage: float | None
) -> dict[str, float]:
    figures: dict[str, float] = {}
    with LocalHost(cluster.topology, cluster.environ) as host:
        status = host.status["weu-to-neu"]
        if outage is not None:
            cluster.nodes["neu"].kill()
        started = time.monotonic()
        cluster.publish("weu", "orders", originals(prefix, count, size=512))
        if outage is not None:
            time.sleep(max(0.0, outage - (time.monotonic() - started)))
            figures["failures"] = status.failures
            cluster.nodes["neu"].start()
            started = time.monotonic()
        eventually(
            lambda: cluster.count("neu", "orders", "audit") >= count,
            timeout=600,
            interval=0.5,
            what="the backlog at the target",
        )
        figures["seconds"] = time.monotonic() - started
    copies = message_ids(cluster.drain("neu", "orders", "audit"))
    figures["duplicates"] = sum(copies.values()) - len(copies)
    figures["missing"] = count - len(copies)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--outage", type=float, default=30.0)
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    document = topology_document(
        ["weu", "neu"], [("weu", "neu")], max_delivery_count=40, tolerance="PT2M"
    )
    with tempfile.TemporaryDirectory() as workdir, Cluster(document, Path(workdir)) as cluster:
        budget = required_delivery_count(cluster.topology, cluster.topology.task("weu-to-neu"))
        steady = _replicate(cluster, args.messages, "steady", outage=None)
        outage = _replicate(cluster, args.messages, "outage", outage=args.outage)
        dead = len(cluster.drain("weu", "orders", "to-neu", dead_letter=True, idle=1))
        parked = len(cluster.drain("weu", "replication-parked", idle=1))
    n = args.messages
    print(f"{n} messages of 512 bytes, target down {args.outage:.0f} s, locks of 5 s")
    print(
        f"  steady (target up):       {steady['seconds']:6.1f} s  "
        f"{n / steady['seconds']:7.0f} msg/s"
    )
    print(
        f"  drain after recovery:     {outage['seconds']:6.1f} s  "
        f"{n / outage['seconds']:7.0f} msg/s  "
        f"({outage['seconds'] / steady['seconds']:.2f}x steady)"
    )
    print(
        f"  failed attempts in the outage: {outage['failures']:.0f} "
        f"(delivery budget of the subscription: {budget})"
    )
    print(
        f"  duplicates: {outage['duplicates']:.0f} (steady {steady['duplicates']:.0f}), "
        f"missing: {outage['missing']:.0f}, dead-lettered: {dead}, parked: {parked}"
    )


if __name__ == "__main__":
    main()

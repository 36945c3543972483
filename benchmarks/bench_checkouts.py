"""Two checkouts side by side: ``plan``, ``validate`` and the local host's throughput.

Run: ``.venv/bin/python benchmarks/bench_checkouts.py --base DIR [--candidate DIR] [--rounds R]
[--messages N]`` where ``DIR`` is another checkout of this repository (for instance ``git
worktree add /tmp/base main``, or ``git archive main | tar -x -C /tmp/base``); the candidate
is the checkout this script is in unless ``--candidate`` names another. Both run with this
interpreter; a change of layout (a module moved to a package) is what this compares, so each
checkout is imported from its own directory.

The commands run in turn, A B A B ..., ``R`` times each, and every ratio is taken pair by
pair (candidate / base), so that a machine whose speed drifts during the run moves both:

- ``plan`` and ``validate``: the whole ``python -m replication COMMAND --topology FILE``
  process, start-up and imports included, wall seconds;
- ``local host``: N messages of 512 bytes published into a Service Bus source (one
  ``python -m emulator`` process per namespace, ``tests/faults/harness.py`` of the checkout),
  then seconds from the local host's start until all N replicas are at the target (also
  printed as messages per second).

Prints for each the median wall and CPU seconds (user + system of the command's process; for
the local host the replicator's own process, the emulators apart), and the median and spread
of the pairwise ratios; every ratio is candidate / base, so below 1 the candidate is faster.
On a loaded machine the CPU ratios are the steadier ones.
"""

from __future__ import annotations

import argparse
import functools
import json
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
TOPOLOGY = "examples/three-region-mesh.json"

# Runs inside a checkout (cwd): replicates N messages with that checkout's local host and
# prints the seconds it took. The local host's module moved in the package layout change.
DRIVER = """
import json, logging, sys, tempfile, time
from pathlib import Path
try:
    from replication.hosts.local import LocalHost
except ImportError:
    from replication.local_host import LocalHost
from tests.faults.harness import Cluster, eventually, originals, topology_document

count = int(sys.argv[1])
logging.basicConfig(level=logging.ERROR)
document = topology_document(["weu", "neu"], [("weu", "neu")])
with tempfile.TemporaryDirectory() as workdir, Cluster(document, Path(workdir)) as cluster:
    cluster.publish("weu", "orders", originals("bench", count, size=512))
    started, cpu = time.monotonic(), time.process_time()
    with LocalHost(cluster.topology, cluster.environ):
        eventually(
            lambda: cluster.count("neu", "orders", "audit") >= count,
            timeout=600,
            interval=0.05,
            what="the replicas at the target",
        )
        seconds, cpu = time.monotonic() - started, time.process_time() - cpu
print(json.dumps({"seconds": seconds, "cpu": cpu}))
"""


def _command(argv: list[str], checkout: Path) -> tuple[float, float]:
    """Wall and CPU seconds (user + system) of one command process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, *argv], cwd=checkout, check=True, capture_output=True, timeout=300
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _host_seconds(checkout: Path, messages: int) -> tuple[float, float]:
    """Wall seconds until the replicas arrived, and the replicator's CPU seconds meanwhile
    (the emulators run in their own processes)."""
    result = subprocess.run(
        [sys.executable, "-c", DRIVER, str(messages)],
        cwd=checkout,
        check=True,
        capture_output=True,
        text=True,
        timeout=900,
    )
    figures = json.loads(result.stdout.strip().splitlines()[-1])
    return float(figures["seconds"]), float(figures["cpu"])


def _pairs(
    measure: Callable[[Path], tuple[float, float]], candidate: Path, base: Path, rounds: int
) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    candidate_times, base_times = [], []
    measure(candidate), measure(base)  # warm-up: caches, .pyc files
    for _ in range(rounds):
        candidate_times.append(measure(candidate))
        base_times.append(measure(base))
    return candidate_times, base_times


def _row(name: str, candidate: list[float], base: list[float]) -> str:
    ratios = sorted(c / b for c, b in zip(candidate, base, strict=True))
    return (
        f"  {name:<16} candidate {statistics.median(candidate):8.3f} s  "
        f"base {statistics.median(base):8.3f} s  "
        f"ratio {statistics.median(ratios):.3f} (min {ratios[0]:.3f}, max {ratios[-1]:.3f})"
    )


def _rows(name: str, candidate: list[tuple[float, float]], base: list[tuple[float, float]]) -> str:
    return "\n".join(
        [
            _row(f"{name} wall", [c[0] for c in candidate], [b[0] for b in base]),
            _row(f"{name} cpu", [c[1] for c in candidate], [b[1] for b in base]),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="the baseline checkout")
    parser.add_argument("--candidate", type=Path, default=HERE, help="default: this checkout")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--skip-host", action="store_true", help="plan and validate only")
    parser.add_argument("--host-only", action="store_true", help="the local host only")
    args = parser.parse_args()
    base, candidate = args.base.resolve(), args.candidate.resolve()
    print(f"candidate {candidate}, base {base}; {args.rounds} rounds, A B A B ...")
    print("ratio: candidate time / base time, pair by pair (below 1: the candidate is faster)")
    for command in () if args.host_only else ("plan", "validate"):
        argv = ["-m", "replication", command, "--topology", TOPOLOGY]
        times = _pairs(functools.partial(_command, argv), candidate, base, args.rounds)
        print(_rows(command, *times))
    if not args.skip_host:

        def host(checkout: Path) -> tuple[float, float]:
            return _host_seconds(checkout, args.messages)

        host_times, base_times = _pairs(host, candidate, base, max(3, args.rounds // 2))
        print(_rows("local host", host_times, base_times))
        walls = (
            statistics.median(t[0] for t in host_times),
            statistics.median(t[0] for t in base_times),
        )
        print(
            f"  local host       candidate {args.messages / walls[0]:8.0f} msg/s  "
            f"base {args.messages / walls[1]:8.0f} msg/s "
            f"({args.messages} messages of 512 bytes, one Service Bus hop)"
        )


if __name__ == "__main__":
    main()

"""Evaluations per second of compiled SQL filters and actions over 100k envelopes.

Run: ``.venv/bin/python benchmarks/bench_sql_filter.py [--count N] [--repeat R]``. Prints the
best of R runs per expression (one core, this process). The issue's target is at least 500k
evaluations per second for the all-active filter ``replication IS NULL``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from replication.envelope import Envelope
from replication.sql import SqlFilter, SqlRuleAction

FILTERS = {
    "all-active: replication IS NULL": "replication IS NULL",
    "6 terms": (
        "replication IS NULL AND sys.Label = 'order' AND region IN ('weu', 'neu') "
        "AND amount > 100 AND customer LIKE 'c-1%' AND NOT EXISTS(test)"
    ),
    "LIKE: customer LIKE '%c%-_[0-4]%9'": "customer LIKE '%c%-_[0-4]%9'",
}
ACTIONS = {"all-active action: SET replication = 1": "SET replication = 1"}


def envelopes(count: int) -> list[Envelope]:
    regions = ("weu", "neu", "eus")
    return [
        Envelope(
            body=b"{}",
            message_id=str(i),
            subject="order" if i % 3 else "invoice",
            application_properties={
                "region": regions[i % 3],
                "amount": i % 500,
                "customer": f"c-{i % 1000}",
                **({"replication": 1} if i % 10 == 0 else {}),
            },
        )
        for i in range(count)
    ]


def best_rate(function: object, batch: list[Envelope], repeat: int) -> tuple[float, int]:
    best = float("inf")
    hits = 0
    for _ in range(repeat):
        start = time.perf_counter()
        hits = sum(1 for envelope in batch if function(envelope))  # type: ignore[operator, misc]
        best = min(best, time.perf_counter() - start)
    return len(batch) / best, hits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    batch = envelopes(args.count)
    print(f"{args.count} envelopes, best of {args.repeat} runs, Python {sys.version.split()[0]}")
    for label, expression in FILTERS.items():
        rate, hits = best_rate(SqlFilter(expression).matches, batch, args.repeat)
        print(f"  filter {label:<40} {rate:>12,.0f} evaluations/s  ({hits} matched)")
    for label, expression in ACTIONS.items():
        rate, _ = best_rate(SqlRuleAction(expression).apply, batch, args.repeat)
        print(f"  action {label:<40} {rate:>12,.0f} applications/s")


if __name__ == "__main__":
    main()

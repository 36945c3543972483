"""The drill's table as ``replication drill`` prints it (:func:`replication.cli.drill.render`)."""

from __future__ import annotations

from replication.cli.drill import COLUMNS, render
from replication.drill import DrillReport


def test_no_two_column_headers_run_together() -> None:
    """Each header sits in a column wider than itself: "dup. without" and "longest receive s"
    once printed as "dup. withoutlongest receive s"."""
    report = DrillReport("planned", {}, {}, {}, {}, {}, [])
    header = next(line for line in render(report).splitlines() if "phase" in line)
    for name, _ in COLUMNS:
        assert f" {name}" in header, name
    assert header.endswith("  switch publisher / consumer s")

"""Every topology of ``examples/`` plans without a loop, and the README's pattern table links an
example of each pattern, one that uses it.

(Validation and rule linting of every example are in ``test_topology.py`` and
``tests/sql/test_lint_rules.py``; the host tier indexes each one through the real worker; the
showcase runs them end to end in ``tests/e2e/test_demo.py``.)
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from replication.cli.plan import walk
from replication.exit_codes import ExitCode
from replication.planning import PATTERN_NAMES
from replication.showcase import SCENARIOS
from replication.topology import load_topology

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.json"))
README = (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_plans_without_a_loop(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert walk(load_topology(path)) == ExitCode.OK
    summary = capsys.readouterr().out.strip().splitlines()[-1]
    assert summary.endswith("0 delivered twice to one entity")


@pytest.mark.parametrize(
    ("messages", "summary"),
    [
        (1, "1 message, 2 copies, 0 delivered twice to one entity"),
        (2, "2 messages, 4 copies, 0 delivered twice to one entity"),
    ],
)
def test_the_plan_summary_counts_in_the_singular_for_one(
    messages: int, summary: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``plan``'s last line; active-passive.json has one source entity and one target."""
    assert walk(load_topology(ROOT / "examples" / "active-passive.json"), messages) == ExitCode.OK
    assert capsys.readouterr().out.strip().splitlines()[-1] == summary


def _pattern_table() -> dict[str, list[str]]:
    """pattern -> the example files its row of "Patterns and their options" links."""
    section = README.split("## Patterns and their options", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, list[str]] = {}
    for line in section.splitlines():
        match = re.match(r"\| `(\w+)` \|", line)
        if match:
            rows[match.group(1)] = re.findall(r"\]\(examples/([\w.-]+\.json)\)", line)
    return rows


def test_the_readme_links_an_example_of_every_pattern_that_uses_it() -> None:
    table = _pattern_table()
    assert sorted(table) == sorted(PATTERN_NAMES)
    for pattern, examples in table.items():
        assert examples, f"{pattern}: no example linked"
        for name in examples:
            used = {task.pattern for task in load_topology(ROOT / "examples" / name).tasks}
            assert pattern in used, f"{name} does not use {pattern}"


def test_every_example_is_linked_from_the_readme_and_every_scenario_has_one() -> None:
    linked = set(re.findall(r"\]\(examples/([\w.-]+\.json)\)", README))
    assert linked == {path.name for path in EXAMPLES}
    assert {scenario.example for scenario in SCENARIOS} <= linked


def test_validate_names_the_subscription_each_rule_is_on_and_the_task_of_each_condition(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from replication.cli import main

    for name in ("two-region-all-active", "routing"):
        assert main(["validate", "--topology", str(ROOT / "examples" / f"{name}.json")]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if "(tasks[" in line]
    assert lines == [
        "  rule $Default on weu/orders/Subscriptions/replication (tasks[0].pattern): filter "
        "replication IS NULL",
        "  rule $Default on weu/orders/Subscriptions/replication (tasks[0].pattern): action "
        "SET replication = 1",
        "  rule $Default on neu/orders/Subscriptions/replication (tasks[1].pattern): filter "
        "replication IS NULL",
        "  rule $Default on neu/orders/Subscriptions/replication (tasks[1].pattern): action "
        "SET replication = 1",
        "  task orders-by-region (tasks[0].options.routes[0].condition): filter region = 'emea'",
        "  task orders-by-region (tasks[0].options.routes[1].condition): filter region = 'amer'",
        "  task orders-by-region (tasks[0].options.routes[2].condition): filter kind = 'recall'",
    ]

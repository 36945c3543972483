"""``python -m replication lint-rules`` over topology files and Bicep string literals."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from replication.cli import main
from replication.cli.lint_rules import bicep_rules

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parent / "fixtures"
EXAMPLE = ROOT / "examples" / "two-region-all-active.json"


def test_examples_and_project_bicep_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Each example's rules, then the project's Bicep once (with the first example): parsing
    # infra/ again for every example took most of this test's time.
    examples = sorted((ROOT / "examples").glob("*.json"))
    for example in examples:
        assert main(["lint-rules", "--topology", str(example), "--bicep-root", str(tmp_path)]) == 0
        assert capsys.readouterr().out.endswith(" rule expression(s) checked, 0 rejected\n")
    arguments = ["lint-rules", "--topology", str(examples[0]), "--bicep-root", str(ROOT / "infra")]
    assert main(arguments) == 0
    assert capsys.readouterr().out.endswith(" rule expression(s) checked, 0 rejected\n")


def test_bicep_literals_are_found_with_kind_and_rule_name() -> None:
    rules = list(bicep_rules(FIXTURES))
    assert [(r.rule_name, r.kind, r.expression) for r in rules] == [
        ("$Default", "filter", "replication IS NULL"),
        ("$Default", "action", "SET replication = 1; SET sys.TimeToLive = '0:2:0'"),
        ("only-orders", "filter", "sys.Label = 'order' AND"),
        # A multi-line literal: a regex scan read it as empty.
        ("multi-line", "filter", "replication IS NULL\n  AND sys.Label IN ('order', 'invoice')\n"),
    ]


def test_a_broken_bicep_rule_is_reported_with_file_line_rule_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(FIXTURES / "broken.bicep", tmp_path / "broken.bicep")
    code = main(["lint-rules", "--topology", str(EXAMPLE), "--bicep-root", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 1
    assert (
        f"{tmp_path / 'broken.bicep'}:24: rule only-orders: column 24: expected an expression"
        in out
    )
    assert "1 rejected" in out


def test_a_broken_topology_rule_is_reported_with_json_path_rule_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Topology rules are rejected when the topology loads (so Function indexing fails too)."""
    document = json.loads(EXAMPLE.read_text())
    subscriptions = document["namespaces"][0]["topics"][0]["subscriptions"]
    subscriptions[0]["rules"] = [{"name": "bad", "filter": {"sql": "color IN ("}}]
    path = tmp_path / "topology.json"
    path.write_text(json.dumps(document))
    code = main(["lint-rules", "--topology", str(path), "--bicep-root", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    assert (
        f"{path}: namespaces[0].topics[0].subscriptions[0].rules[0]: rule bad: filter: "
        "column 11: expected an expression, found end of input"
    ) in err

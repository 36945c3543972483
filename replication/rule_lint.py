"""``python -m replication lint-rules``: parse every SQL rule before Service Bus sees it.

Checks every filter, action and pattern condition of the topology file (including the
loop-prevention rules the tasks add) and every string literal assigned to ``sqlExpression`` in
the Bicep files under ``--bicep-root``. Bicep values that are expressions (parameters,
interpolations) are not literals; they come from the topology and are checked there.

Every problem is printed as ``FILE[:LINE]: rule NAME: column C: message``; the exit code is 1
when there is any, 0 otherwise.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from replication.commands import add_topology_option
from replication.sql import SqlFilter, SqlRuleAction, SqlSyntaxError
from replication.topology import load_topology

_SQL_EXPRESSION = re.compile(r"\bsqlExpression\s*:\s*'((?:[^'\\\n]|\\.)*)'")
_NAME = re.compile(r"\bname\s*:\s*'((?:[^'\\\n]|\\.)*)'")
_OPENING_KEY = re.compile(r"(\w+)\s*:\s*\{\s*$")
_BICEP_ESCAPES = {"\\'": "'", "\\\\": "\\", "\\n": "\n", "\\r": "\r", "\\t": "\t", "\\$": "$"}


@dataclasses.dataclass(frozen=True)
class RuleProblem:
    """One rejected expression and where it is."""

    where: str
    rule_name: str
    error: SqlSyntaxError

    def __str__(self) -> str:
        return f"{self.where}: rule {self.rule_name}: {self.error}"


@dataclasses.dataclass(frozen=True)
class RuleText:
    """An SQL expression found in a file, and whether it is a filter or an action."""

    where: str
    rule_name: str
    kind: str
    expression: str


def check(rule: RuleText) -> RuleProblem | None:
    """The problem with ``rule``, or None when Service Bus would accept it."""
    try:
        (SqlFilter if rule.kind == "filter" else SqlRuleAction)(rule.expression)
    except SqlSyntaxError as error:
        return RuleProblem(rule.where, rule.rule_name, error)
    return None


def topology_rules(path: str) -> Iterator[RuleText]:
    topology = load_topology(path)
    for rule in topology.sql_rules():
        yield RuleText(f"{path}: {rule.location}", rule.rule_name, rule.kind, rule.expression)


def _unescape(literal: str) -> str:
    return re.sub(r"\\.", lambda m: _BICEP_ESCAPES.get(m.group(0), m.group(0)), literal)


def _enclosing_key(text: str, position: int) -> str | None:
    """The key of the object literal that contains ``position`` (``sqlFilter`` or ``action``)."""
    depth = 0
    for index in range(position - 1, -1, -1):
        char = text[index]
        if char == "}":
            depth += 1
        elif char == "{":
            if depth == 0:
                match = _OPENING_KEY.search(text[: index + 1])
                return match.group(1) if match else None
            depth -= 1
    return None


def bicep_rules(root: Path) -> Iterator[RuleText]:
    for path in sorted(root.rglob("*.bicep")):
        text = path.read_text(encoding="utf-8")
        for match in _SQL_EXPRESSION.finditer(text):
            literal = match.group(1)
            if "${" in literal:
                continue
            names = _NAME.findall(text, 0, match.start())
            line = text.count("\n", 0, match.start()) + 1
            key = _enclosing_key(text, match.start())
            yield RuleText(
                f"{path}:{line}",
                _unescape(names[-1]) if names else "?",
                "action" if key == "action" else "filter",
                _unescape(literal),
            )


def lint(args: argparse.Namespace) -> int:
    rules = list(topology_rules(args.topology))
    root = Path(args.bicep_root)
    if root.is_dir():
        rules += list(bicep_rules(root))
    problems = [problem for rule in rules if (problem := check(rule)) is not None]
    for problem in problems:
        print(problem)
    print(f"{len(rules)} rule expression(s) checked, {len(problems)} rejected")
    return 1 if problems else 0


def register(subparsers: Any) -> None:
    """Add ``lint-rules`` to the CLI."""
    parser = subparsers.add_parser(
        "lint-rules", help="parse every SQL filter and action of the topology and the Bicep files"
    )
    add_topology_option(parser)
    parser.add_argument("--bicep-root", default="infra", help="folder searched for *.bicep")
    parser.set_defaults(handler=lint)


__all__ = ["RuleProblem", "RuleText", "bicep_rules", "check", "register", "topology_rules"]

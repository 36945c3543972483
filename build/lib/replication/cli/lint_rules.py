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

from replication.exit_codes import ExitCode
from replication.rules import SqlText
from replication.sql import SqlSyntaxError
from replication.topology import load_topology, sql_texts

from ._options import add_topology_option

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


def check(rule: SqlText) -> RuleProblem | None:
    """The problem with ``rule``, or None when Service Bus would accept it."""
    error = rule.problem()
    return None if error is None else RuleProblem(rule.where, rule.rule_name, error)


def topology_rules(path: str) -> Iterator[SqlText]:
    for rule in sql_texts(load_topology(path)):
        yield rule.located(path)


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


def bicep_rules(root: Path) -> Iterator[SqlText]:
    for path in sorted(root.rglob("*.bicep")):
        text = path.read_text(encoding="utf-8")
        for match in _SQL_EXPRESSION.finditer(text):
            literal = match.group(1)
            if "${" in literal:
                continue
            names = _NAME.findall(text, 0, match.start())
            line = text.count("\n", 0, match.start()) + 1
            key = _enclosing_key(text, match.start())
            yield SqlText(
                f"{path}:{line}",
                _unescape(names[-1]) if names else "?",
                "action" if key == "action" else "filter",
                _unescape(literal),
            )


def run(args: argparse.Namespace) -> int:
    rules = list(topology_rules(args.topology))
    root = Path(args.bicep_root)
    if root.is_dir():
        rules += list(bicep_rules(root))
    problems = [problem for rule in rules if (problem := check(rule)) is not None]
    for problem in problems:
        print(problem)
    print(f"{len(rules)} rule expression(s) checked, {len(problems)} rejected")
    return ExitCode.FINDINGS if problems else ExitCode.OK


def configure(parser: argparse.ArgumentParser) -> None:
    add_topology_option(parser)
    parser.add_argument("--bicep-root", default="infra", help="folder searched for *.bicep")


__all__ = ["RuleProblem", "bicep_rules", "check", "configure", "run", "topology_rules"]

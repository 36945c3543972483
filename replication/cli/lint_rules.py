"""``python -m replication lint-rules``: parse every SQL rule before Service Bus sees it.

Checks every filter, action and pattern condition of the topology file (including the
loop-prevention rules the tasks add) and every string literal assigned to ``sqlExpression`` of a
subscription rule resource in the Bicep files under ``--bicep-root`` (default ``infra``, when it
exists), parsed with pycep-parser: the ``lint`` extra. Without it, an explicit ``--bicep-root``
ends with the one-line error naming the extra, and the default folder is skipped with a note,
so that the topology is still checked (the azd hook runs this with the app's requirements
only). Bicep values that are expressions (parameters, interpolations) are not literals; they
come from the topology and are checked there.

Every problem is printed as ``FILE[:LINE]: rule NAME: column C: message``; the exit code is 1
when there is any, 0 otherwise.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
from collections.abc import Iterator
from pathlib import Path

from replication.exit_codes import ExitCode
from replication.extras import EXTRAS, require
from replication.rules import SqlText
from replication.sql import SqlSyntaxError
from replication.topology import load_topology, sql_texts

from ._options import add_topology_option

DEFAULT_BICEP_ROOT = "infra"
RULE_TYPE = "Microsoft.ServiceBus/namespaces/topics/subscriptions/rules"
# pycep hands string literals over with Bicep's escapes still in them.
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
    for rule in sql_texts(load_topology(path, user_code=False)):
        yield rule.located(path)


def _unescape(literal: str) -> str:
    return re.sub(r"\\.", lambda m: _BICEP_ESCAPES.get(m.group(0), m.group(0)), literal)


def _line(text: str, start: int, key: str) -> int:
    """The line of the ``sqlExpression`` inside ``key`` (``sqlFilter`` / ``action``) of the
    resource declared at ``start``; pycep does not report positions."""
    block = text.find(f"{key}:", start)
    expression = text.find("sqlExpression", block if block >= 0 else start)
    return text.count("\n", 0, max(expression, start)) + 1


def bicep_rules(root: Path) -> Iterator[SqlText]:
    """The literal SQL filters and actions of every subscription rule resource under ``root``.

    Parsed with pycep-parser, so single-quoted and multi-line (``'''...'''``) literals read
    the same. Interpolated strings and expressions come from parameters and are skipped.
    """
    from pycep import BicepParser  # the `lint` extra: imported only when Bicep is checked

    parser = BicepParser()
    for path in sorted(root.rglob("*.bicep")):
        text = path.read_text(encoding="utf-8")
        resources = parser.parse(text=text).get("resources") or {}
        for symbol, resource in resources.items():
            if not isinstance(resource, dict) or resource.get("type") != RULE_TYPE:
                continue
            config = resource.get("config") or {}
            properties = config.get("properties") or {}
            start = text.find(f"resource {symbol} ")
            name = config.get("name")
            for kind, key in (("filter", "sqlFilter"), ("action", "action")):
                expression = (properties.get(key) or {}).get("sqlExpression")
                if not isinstance(expression, str) or "${" in expression:
                    continue
                yield SqlText(
                    f"{path}:{_line(text, start, key)}",
                    _unescape(name) if isinstance(name, str) else "?",
                    kind,  # type: ignore[arg-type]
                    _unescape(expression),
                )


def run(args: argparse.Namespace) -> int:
    rules = list(topology_rules(args.topology))
    root = Path(args.bicep_root or DEFAULT_BICEP_ROOT)
    if root.is_dir():
        if args.bicep_root is None and EXTRAS["lint"].missing():
            print(
                f"note: {root}/**/*.bicep not checked: {EXTRAS['lint'].install_hint()}",
                file=sys.stderr,
            )
        else:
            require("lint", needed_by="replication lint-rules --bicep-root")
            rules += list(bicep_rules(root))
    problems = [problem for rule in rules if (problem := check(rule)) is not None]
    for problem in problems:
        print(problem)
    print(f"{len(rules)} rule expression(s) checked, {len(problems)} rejected")
    return ExitCode.FINDINGS if problems else ExitCode.OK


def configure(parser: argparse.ArgumentParser) -> None:
    add_topology_option(parser, transforms=False)
    parser.add_argument(
        "--bicep-root",
        metavar="DIR",
        help=f"folder searched for *.bicep (default: {DEFAULT_BICEP_ROOT}, when it exists; "
        "needs the 'lint' extra)",
    )


__all__ = ["RuleProblem", "bicep_rules", "check", "configure", "run", "topology_rules"]

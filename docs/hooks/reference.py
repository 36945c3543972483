"""The reference pages' generated parts, written from the code when the site is built.

A page of ``docs/`` asks for one with a line ``<!-- generated: NAME -->``; :func:`on_page_markdown`
(an MkDocs hook, ``mkdocs.yml``) puts the Markdown of ``GENERATORS[NAME]`` in its place, so the
reference cannot drift from the code:

- ``topology``: every record of the topology file with its keys, types, defaults, constraints
  and descriptions, from the JSON Schema :func:`replication.topology.topology_schema` writes from
  the loader's pydantic models (each pattern's options included);
- ``cli``: every command of ``replication`` and its options, from the argparse parsers
  (:func:`replication.cli.build_parser`);
- ``settings``: the app settings, from the table in :mod:`replication.settings`' docstring,
  which names every setting the library reads;
- ``metrics``: every instrument the library creates (name, kind, unit, description), read from
  the ``create_*`` calls in the source;
- ``exit-codes``: :class:`replication.exit_codes.ExitCode`, with each member's docstring.

An unknown name fails the build. :func:`on_page_content` drops the reST roles of the
docstrings mkdocstrings renders (the API page). ``tests/docs/test_reference.py`` checks that
every topology key, command option and setting of the code appears in the generated pages.
"""

from __future__ import annotations

import argparse
import ast
import itertools
import json
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.MULTILINE)


def plain(text: str) -> str:
    """reST markup of the docstrings as Markdown: ``code`` and :role:`~a.b.name` as `name`."""
    text = re.sub(r":\w+:`~?([\w.]+\.)?([^`]+)`", r"`\2`", text)
    return text.replace("``", "`")


def _cell(text: str) -> str:
    return " ".join(plain(text).split()).replace("|", "\\|")


# -- topology ---------------------------------------------------------------------------------

_TITLES = {
    "Topology": "The document",
    "NamespaceSpec": "Namespace",
    "QueueSpec": "Queue",
    "TopicSpec": "Topic",
    "SubscriptionSpec": "Subscription",
    "RuleSpec": "Rule",
    "RuleFilterSpec": "Rule filter",
    "CorrelationFilterSpec": "Correlation filter",
    "EventHubSpec": "Event hub",
    "TaskSpec": "Task",
    "EntityRef": "Entity reference",
    "RetrySpec": "Retry",
    "TransformSpec": "Transform",
    "HeartbeatSpec": "Heartbeats",
    "MonitoringSpec": "Monitoring",
}


def _title(name: str) -> str:
    """A record's heading: its name in the file, a pattern's options by the pattern's name."""
    if name in _TITLES:
        return _TITLES[name]
    words = re.sub(r"(?<!^)(?=[A-Z])", " ", name).lower()
    if words.endswith(" options"):
        return words.removesuffix(" options").replace(" ", "_") + " options"
    return words.capitalize()


def _anchor(name: str) -> str:
    return _title(name).lower().replace(" ", "-")


def _ref_name(node: dict[str, Any]) -> str | None:
    ref = node.get("$ref")
    return ref.rpartition("/")[2] if isinstance(ref, str) else None


def _duration_text(node: dict[str, Any]) -> str | None:
    """The text branch's description of a duration node, bounds included (None: the node is
    not a duration). The schema writes a duration as ISO-8601 text or a number of seconds and
    keeps the field's own description on the node."""
    for option in node.get("anyOf", []):
        text = str(option.get("description", ""))
        if option.get("type") == "string" and text.startswith("an ISO-8601 duration"):
            return text
    return None


def _is_duration(node: dict[str, Any]) -> bool:
    return _duration_text(node) is not None


def _type(node: dict[str, Any], defs: dict[str, Any]) -> str:
    """A schema node's type in words, with links to the records it holds (enumerations
    inline)."""
    name = _ref_name(node)
    if name is not None and "enum" in defs[name]:
        return _type(defs[name], defs)
    if name is not None:
        return f"[{_title(name)}](#{_anchor(name)})"
    if _is_duration(node):
        return "duration"
    if "anyOf" in node:
        kinds = [_type(option, defs) for option in node["anyOf"] if option.get("type") != "null"]
        nullable = any(option.get("type") == "null" for option in node["anyOf"])
        return " or ".join(kinds) + (" or null" if nullable else "")
    if "enum" in node:
        return "one of " + ", ".join(f"`{json.dumps(value)}`" for value in node["enum"])
    kind = node.get("type")
    if kind == "array":
        return f"list of {_type(node.get('items', {}), defs)}"
    if kind == "object":
        values = node.get("additionalProperties")
        if isinstance(values, dict):
            return f"map of string to {_type(values, defs)}"
        return "object"
    return str(kind or "any")


def _constraints(node: dict[str, Any]) -> str:
    """The node's constraints in words (its anyOf branches' too)."""
    words = []
    duration = _duration_text(node)
    if duration is not None:
        found = re.search(r"\(([^)]*)\)$", duration)
        return found.group(1) if found else ""
    for option in node.get("anyOf", []):
        if option.get("type") != "null" and "$ref" not in option:
            words.append(_constraints(option))
    for key, text in (
        ("minimum", "at least {}"),
        ("exclusiveMinimum", "more than {}"),
        ("maximum", "at most {}"),
        ("minLength", "at least {} characters"),
        ("maxLength", "at most {} characters"),
        ("minItems", "at least {} item(s)"),
        ("pattern", "matches `{}`"),
    ):
        if key in node:
            words.append(text.format(node[key]))
    names = node.get("propertyNames", {})
    if "not" in names:
        words.append("keys: not a replication property (`repl-*`, `replication`)")
    if "not" in node:
        words.append("not a replication property (`repl-*`, `replication`)")
    items = node.get("items")
    if isinstance(items, dict) and "not" in items:
        words.append("items: not a replication property (`repl-*`, `replication`)")
    return "; ".join(word for word in words if word)


def _records(schema: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any], list[str]]]:
    """Each record with the JSON paths that hold it, in the order a reader meets them in the
    document (depth first: a namespace, then its queues, topics, subscriptions, ...)."""
    definitions = schema["$defs"]
    paths: dict[str, list[str]] = {"Topology": ["$"]}
    order = ["Topology"]

    def visit(node: Any, path: str) -> None:
        if isinstance(node, dict):
            name = _ref_name(node)
            if name is not None and "enum" in definitions[name]:
                return
            if name is not None:
                first = name not in paths
                if first:
                    paths[name] = []
                    order.append(name)
                if path not in paths[name]:
                    paths[name].append(path)
                if first:
                    visit(definitions[name], path)
                return
            for key, value in node.items():
                if key == "properties":
                    for prop, sub in value.items():
                        visit(sub, f"{path}.{prop}" if path != "$" else prop)
                elif key == "items":
                    visit(value, f"{path}[]")
                elif key == "additionalProperties":
                    visit(value, f"{path}.*")
                elif key in ("anyOf", "allOf"):
                    for sub in value:
                        visit(sub, path)
                elif key == "then":
                    visit(value, path)

    document = {key: value for key, value in schema.items() if key != "$defs"}
    visit(document, "$")
    for name in order:
        yield name, (document if name == "Topology" else definitions[name]), paths[name]


def topology_reference() -> str:
    from replication.topology import topology_schema

    schema = topology_schema()
    lines = []
    for name, record, paths in _records(schema):
        lines += [f"### {_title(name)}", ""]
        if name != "Topology":
            where = ", ".join(f"`{path}`" for path in paths)
            lines += [f"At {where}.", ""]
        if record.get("description"):
            lines += [plain(record["description"]), ""]
        properties = record.get("properties", {})
        if not properties:
            lines += ["No keys.", ""]
            continue
        required = set(record.get("required", []))
        lines += [
            "| key | type | default | constraints | description |",
            "| --- | --- | --- | --- | --- |",
        ]
        for key, node in properties.items():
            default = "required" if key in required else _default(node)
            kind = _cell(_type(node, schema["$defs"]))
            lines.append(
                f"| `{key}` | {kind} | {default} | {_cell(_constraints(node))} "
                f"| {_cell(node.get('description', ''))} |"
            )
        lines.append("")
    return "\n".join(lines)


def _default(node: dict[str, Any]) -> str:
    if "default" not in node:
        return "\N{EN DASH}"
    return f"`{json.dumps(node['default'])}`"


# -- command line -----------------------------------------------------------------------------


def _option_row(action: argparse.Action) -> str:
    names = ", ".join(f"`{name}`" for name in action.option_strings) or f"`{action.dest}`"
    if action.choices:
        value = " \\| ".join(f"`{choice}`" for choice in action.choices)
    elif action.nargs == 0:
        value = "(flag)"
    else:
        value = f"`{action.metavar or action.dest.upper()}`"
    help_text = str(action.help or "")
    default = ""
    if (
        action.nargs != 0
        and action.default not in (None, argparse.SUPPRESS)
        and "default" not in help_text
    ):
        default = f"`{action.default}`"
    if action.required:
        default = "required"
    return f"| {names} | {value} | {default} | {_cell(help_text)} |"


def _actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [
        action
        for action in parser._actions
        if not isinstance(action, argparse._HelpAction | argparse._SubParsersAction)
    ]


def cli_reference() -> str:
    from replication.cli import COMMANDS, PROG, build_parser

    parser, _ = build_parser()
    lines = [
        f"### `{PROG}`",
        "",
        "| option | value | default | meaning |",
        "| --- | --- | --- | --- |",
        *(_option_row(action) for action in _actions(parser)),
        "",
    ]
    for name, command in COMMANDS.items():
        _, commands = build_parser(name)
        subparser = commands[name]
        usage = " ".join(subparser.format_usage().split()).removeprefix("usage: ")
        extras = ", ".join(f"`{extra}`" for extra in command.extras)
        lines += [f"### `{PROG} {name}`", "", _cell(command.help) + ".", ""]
        if subparser.description and subparser.description != command.help:
            lines += [_cell(subparser.description), ""]
        if extras:
            lines += [
                f"Needs the extra {extras} (`pip install azure-messaging-replication[...]`).",
                "",
            ]
        lines += ["```text", usage, "```", ""]
        lines += ["| option | value | default | meaning |", "| --- | --- | --- | --- |"]
        lines += [_option_row(action) for action in _actions(subparser)]
        lines.append("")
    return "\n".join(lines)


# -- settings ---------------------------------------------------------------------------------


def settings_rows() -> list[tuple[str, str]]:
    """(setting, meaning) from the reST table of :mod:`replication.settings`' docstring."""
    import replication.settings

    text = replication.settings.__doc__ or ""
    borders = [line for line in text.splitlines() if re.fullmatch(r"=+\s+=+", line)]
    if len(borders) < 2:
        raise ValueError("replication.settings' docstring lost its table")
    split = len(borders[0]) - len(borders[0].split()[1])  # where the second column starts
    body = text.split(borders[0] + "\n", 1)[1].split("\n" + borders[0], 1)[0]
    rows: list[tuple[str, str]] = []
    for line in body.splitlines():
        name, meaning = line[:split].strip(), line[split:].strip()
        if name:
            rows.append((name, meaning))
        elif rows:
            # A continuation line; "transport." + "connections" was one dotted name.
            joiner = "" if rows[-1][1].endswith(".") else " "
            rows[-1] = (rows[-1][0], rows[-1][1] + joiner + meaning)
    return rows


def settings_reference() -> str:
    lines = ["| setting | meaning |", "| --- | --- |"]
    lines += [f"| {_cell(name)} | {_cell(meaning)} |" for name, meaning in settings_rows()]
    return "\n".join(lines) + "\n"


# -- metrics ----------------------------------------------------------------------------------

_KINDS = {
    "create_counter": "counter",
    "create_up_down_counter": "up-down counter",
    "create_histogram": "histogram",
    "create_observable_gauge": "gauge",
    "create_observable_counter": "observable counter",
}


def instruments() -> list[dict[str, str]]:
    """Every instrument the library creates: name, kind, unit, description, module."""
    found = []
    for path in sorted((ROOT / "replication").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        constants = {
            target.id: node.value.value
            for node in tree.body
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
            for target in node.targets
            if isinstance(target, ast.Name)
        }
        for node in ast.walk(tree):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in _KINDS
                and node.args
            ):
                continue
            first = node.args[0]
            name = first.value if isinstance(first, ast.Constant) else None
            if isinstance(first, ast.Name):
                name = constants.get(first.id)
            keywords = {
                k.arg: k.value.value
                for k in node.keywords
                if k.arg and isinstance(k.value, ast.Constant)
            }
            found.append(
                {
                    "name": str(name),
                    "kind": _KINDS[node.func.attr],
                    "unit": str(keywords.get("unit", "")),
                    "description": str(keywords.get("description", "")),
                    "module": ".".join(path.relative_to(ROOT).with_suffix("").parts),
                }
            )
    return found


def metrics_reference() -> str:
    lines = [
        "| metric | kind | unit | description | created in |",
        "| --- | --- | --- | --- | --- |",
    ]
    lines += [
        f"| `{i['name']}` | {i['kind']} | `{i['unit']}` | {_cell(i['description'])} "
        f"| `{i['module']}` |"
        for i in instruments()
    ]
    return "\n".join(lines) + "\n"


# -- exit codes -------------------------------------------------------------------------------


def exit_codes_reference() -> str:
    from replication.exit_codes import ExitCode

    tree = ast.parse((ROOT / "replication" / "exit_codes.py").read_text(encoding="utf-8"))
    (enum_class,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ExitCode"]
    docs: dict[str, str] = {}
    body = enum_class.body
    for node, following in itertools.pairwise(body):
        if (
            isinstance(node, ast.Assign)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
        ):
            docs[node.targets[0].id] = str(following.value.value)  # type: ignore[attr-defined]
    lines = ["| code | name | meaning |", "| --- | --- | --- |"]
    lines += [f"| {code.value} | `{code.name}` | {_cell(docs[code.name])} |" for code in ExitCode]
    return "\n".join(lines) + "\n"


GENERATORS: dict[str, Callable[[], str]] = {
    "topology": topology_reference,
    "cli": cli_reference,
    "settings": settings_reference,
    "metrics": metrics_reference,
    "exit-codes": exit_codes_reference,
}


def generate(markdown: str, where: str) -> str:
    """``markdown`` with every marker replaced by its generated part."""

    # MkDocs restores sys.path after loading a hook: the checkout goes on it here.
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            raise ValueError(f"{where}: no generator '{name}' (known: {', '.join(GENERATORS)})")
        return GENERATORS[name]()

    return MARKER.sub(replace, markdown)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """MkDocs hook: the page's markers replaced."""
    return generate(markdown, page.file.src_uri)


_ROLE = re.compile(r":(?:mod|func|class|meth|data|attr|exc|obj):(<code>)~?")


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    """MkDocs hook: the docstrings' reST roles (``:func:`~a.b```), which mkdocstrings renders as
    text before the code, dropped, with the ``~`` that shortens the name."""
    return _ROLE.sub(r"\1", html)

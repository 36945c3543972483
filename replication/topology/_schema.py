"""The topology file's JSON Schema, generated from the same pydantic models the loader validates
with (``replication schema``), so that editors complete and check what the loader accepts.

pydantic writes most of it. Three things are added here, each because the model holds the rule
in a validator a generic generator cannot see:

- durations (:data:`replication.durations.Duration`): ISO-8601 text matching
  :data:`~replication.durations.ISO8601_PATTERN`, or a number of seconds within the field's
  bounds (pydantic writes ``"format": "duration"`` with bounds as ISO-8601 text, which no
  validator reads); the field's own description stays on the node, and each branch says what
  it accepts;
- a task's ``options``: the options model of the task's ``pattern`` (``if``/``then`` per
  pattern), and ``pattern`` itself as the registry's names;
- a task's ``transform``: a ``package.module:function`` string as well as the object;
- what a namespace may hold by its ``kind`` (:meth:`NamespaceSpec._entities_match_kind
  <replication.topology.NamespaceSpec>`): no event hubs in a Service Bus namespace, no queues
  or topics in an Event Hubs one, no Event Hubs Capture timings on a Service Bus capture, and,
  with a ``capture``, no rules on a declared capture subscription (:mod:`._capture`).

What a schema cannot express stays the loader's alone: cross-references (a task's namespace and
entity exist, names are unique, a target differs from its source), SQL syntax, delivery counts
against the outage tolerance, session compatibility and pattern checks against the targets
(``tests/unit/test_topology_schema.py`` lists the fixtures only the loader refuses).
"""

from __future__ import annotations

import ast
import inspect
import json
import textwrap
from collections.abc import Iterator, Sequence
from datetime import timedelta
from typing import Any, Literal, get_args

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from replication.durations import ISO8601_PATTERN, parse_iso8601
from replication.planning import PATTERN_NAMES, load_pattern

from ._capture import CAPTURE_SUBSCRIPTION
from ._specs import NamespaceKind
from ._topology import Topology

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
SCHEMA_TITLE = "Replication topology"
SCHEMA_DESCRIPTION = (
    "A replication topology: namespaces and their entities, the replication tasks between "
    "them, heartbeats and alert thresholds (azure-messaging-replication)."
)

_BOUNDS = {"gt": "exclusiveMinimum", "ge": "minimum", "lt": "exclusiveMaximum", "le": "maximum"}
_BOUND_WORDS = {"gt": "more than", "ge": "at least", "lt": "less than", "le": "at most"}


def topology_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a topology file."""
    options: dict[str, type[BaseModel]] = {
        name: load_pattern(name).options_model for name in PATTERN_NAMES
    }
    models: list[tuple[type[BaseModel], Literal["validation"]]] = [
        (Topology, "validation"),
        *((model, "validation") for model in options.values()),
    ]
    _describe_fields([model for model, _ in models])
    refs, schema = models_json_schema(
        models, by_alias=True, ref_template="#/$defs/{model}", title=SCHEMA_TITLE
    )
    definitions: dict[str, Any] = schema["$defs"]
    topology_ref = refs[(Topology, "validation")]["$ref"].rpartition("/")[2]
    document = definitions.pop(topology_ref)
    task = definitions["TaskSpec"]
    task["properties"]["pattern"] = {
        "enum": list(PATTERN_NAMES),
        "description": "the federation pattern (its options go in `options`)",
    }
    task["properties"]["transform"]["anyOf"].insert(
        0,
        {
            "type": "string",
            "minLength": 1,
            "description": "`package.module:function`, or a name registered in code",
        },
    )
    task["allOf"] = [
        _options_of(name, refs[(model, "validation")]["$ref"], model)
        for name, model in options.items()
    ]
    definitions["NamespaceSpec"]["allOf"] = _namespace_kind_rules()
    result: dict[str, Any] = {
        "$schema": SCHEMA_DIALECT,
        "title": SCHEMA_TITLE,
        **{key: value for key, value in document.items() if key != "title"},
        "description": SCHEMA_DESCRIPTION,
        "$defs": definitions,
    }
    cleaned: dict[str, Any] = _cleaned(result)
    return cleaned


def topology_schema_text() -> str:
    """The schema as its file holds it: indented JSON with a final newline."""
    return json.dumps(topology_schema(), indent=2) + "\n"


def _describe_fields(roots: Sequence[type[BaseModel]]) -> None:
    """Give every field of ``roots`` and the models they hold the docstring written under it as
    its description, then rebuild each model (the ones it holds first), so that the schema
    carries them.

    This is what pydantic's ``use_attribute_docstrings`` does when each model class is created,
    and what the models no longer ask for: pydantic finds a class's source by walking the
    interpreter's frames, which cost a fifth of the local host's start-up (instructions of the
    imports, topology load and host construction, issue 37); only the schema reads the
    descriptions. The docstrings are read as pydantic reads them (:func:`_attribute_docstrings`)."""
    done: set[type[BaseModel]] = set()

    def visit(model: type[BaseModel]) -> None:
        if model in done:
            return
        done.add(model)
        for field in model.model_fields.values():
            for held in _models_in(field.annotation):
                visit(held)
        docs: dict[str, str] = {}
        for klass in reversed(model.__mro__):
            if issubclass(klass, BaseModel) and klass is not BaseModel:
                docs.update(_attribute_docstrings(klass))
        for name, field in model.model_fields.items():
            if field.description is None and name in docs:
                field.description = docs[name]
        model.model_rebuild(force=True)

    for root in roots:
        visit(root)


def _models_in(annotation: object) -> Iterator[type[BaseModel]]:
    """The model classes an annotation holds (``X | None``, ``list[X]``, ``dict[str, X]`` ...)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
    for argument in get_args(annotation):
        yield from _models_in(argument)


def _attribute_docstrings(klass: type) -> dict[str, str]:
    """The docstrings written under the annotated attributes of ``klass``'s own body, as
    pydantic's ``use_attribute_docstrings`` reads them (a string expression right after the
    annotated assignment, cleaned with :func:`inspect.cleandoc`)."""
    try:
        source = textwrap.dedent(inspect.getsource(klass))
    except (OSError, TypeError):
        return {}
    body = next(
        (node.body for node in ast.parse(source).body if isinstance(node, ast.ClassDef)), []
    )
    docs: dict[str, str] = {}
    target: str | None = None
    for statement in body:
        if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            target = statement.target.id
            continue
        value = statement.value if isinstance(statement, ast.Expr) else None
        if target and isinstance(value, ast.Constant) and isinstance(value.value, str):
            docs[target] = inspect.cleandoc(value.value)
        target = None
    return docs


def _options_of(name: str, ref: str, model: type[BaseModel]) -> dict[str, Any]:
    required = any(field.is_required() for field in model.model_fields.values())
    then: dict[str, Any] = {"properties": {"options": {"$ref": ref}}}
    if required:
        then["required"] = ["options"]
    return {
        "if": {"properties": {"pattern": {"const": name}}, "required": ["pattern"]},
        "then": then,
    }


def _namespace_kind_rules() -> list[dict[str, Any]]:
    """``if``/``then`` per namespace kind, and for a namespace with a capture (the loader's
    own rules, see the module docstring)."""

    def kind(value: NamespaceKind) -> dict[str, Any]:
        return {"properties": {"kind": {"const": value.value}}, "required": ["kind"]}

    empty = {"type": "array", "maxItems": 0}
    timings = {"anyOf": [{"required": ["interval"]}, {"required": ["sizeLimitBytes"]}]}
    # Service Bus names are case-insensitive, as the loader compares them.
    reserved = (
        "^"
        + "".join(f"[{c.upper()}{c.lower()}]" if c.isalpha() else c for c in CAPTURE_SUBSCRIPTION)
        + "$"
    )
    capture_subscription = {
        "if": {"properties": {"name": {"pattern": reserved}}, "required": ["name"]},
        "then": {"properties": {"rules": empty}},
    }
    subscriptions = {"items": {"properties": {"subscriptions": {"items": capture_subscription}}}}
    return [
        {
            "if": kind(NamespaceKind.SERVICEBUS),
            "then": {
                "properties": {
                    "eventHubs": empty,
                    "capture": {"anyOf": [{"type": "null"}, {"not": timings}]},
                }
            },
        },
        {
            "if": kind(NamespaceKind.EVENTHUBS),
            "then": {"properties": {"queues": empty, "topics": empty}},
        },
        {
            "if": {"properties": {"capture": {"type": "object"}}, "required": ["capture"]},
            "then": {"properties": {"topics": subscriptions}},
        },
    ]


def _seconds(text: str) -> float:
    return parse_iso8601(text) / timedelta(seconds=1)


def _duration(node: dict[str, Any]) -> dict[str, Any]:
    """A ``"format": "duration"`` node as ISO-8601 text or a number of seconds, bounds kept.

    The node keeps the field's own description; each branch says what it accepts, the text
    branch with the bounds in ISO-8601 words (``(at least PT5S, at most PT5M)``), which the
    reference page's generator shows as the constraints (``docs/hooks/reference.py``)."""
    number: dict[str, Any] = {"type": "number", "description": "a number of seconds"}
    words = []
    for bound, keyword in _BOUNDS.items():
        if bound in node:
            number[keyword] = _seconds(node[bound])
            words.append(f"{_BOUND_WORDS[bound]} {node[bound]}")
    text = "an ISO-8601 duration such as PT2M or P1D"
    if words:
        text += " (" + ", ".join(words) + ")"
    result: dict[str, Any] = {
        "anyOf": [{"type": "string", "pattern": ISO8601_PATTERN, "description": text}, number],
    }
    if isinstance(node.get("description"), str):
        result["description"] = node["description"].replace("``", "`")
    if "default" in node:
        result["default"] = node["default"]
    return result


def _cleaned(node: Any) -> Any:
    """Durations rewritten, pydantic's generated titles dropped, reST ``code`` made Markdown."""
    if isinstance(node, list):
        return [_cleaned(item) for item in node]
    if not isinstance(node, dict):
        return node
    if node.get("format") == "duration":
        return _duration(node)
    result = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str) and value != SCHEMA_TITLE:
            continue
        if key == "description" and isinstance(value, str):
            value = value.replace("``", "`")
        result[key] = value if key in ("default", "const", "enum") else _cleaned(value)
    return result


__all__ = ["SCHEMA_DIALECT", "SCHEMA_TITLE", "topology_schema", "topology_schema_text"]

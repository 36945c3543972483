"""Azure's resource type schemas, as the Bicep compiler reads them, and a checker of bodies.

The files in ``arm_types/`` are copies of ``generated/<provider>/<namespace>/<version>/types.json``
from the public repository Azure/bicep-types-az (``arm_types/SOURCES.json`` records the commit,
path and SHA-256 of each): the generated type data the Bicep compiler ships and checks templates
against. Each file is a JSON array of types that refer to each other by index (``{"$ref":
"#/12"}``); a ``ResourceType`` names ``Type@apiVersion`` and points at the body's ``ObjectType``.

:func:`problems` walks a resource body along its schema, the way the compiler's type check does
for what it can see: every property must be declared (or allowed by ``additionalProperties``),
must not be read-only, must have the declared type (string, int, bool, a string literal of a
union, object, array, discriminated object), and required properties must be present. Values
unknown before deployment (:class:`bicep_eval.Unknown`) are accepted as any type, since the
compiler cannot see them either.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

from tests.infra.bicep_eval import BICEP_ONLY_KEYS, Unknown

TYPES_DIR = Path(__file__).resolve().parent / "arm_types"
REQUIRED, READ_ONLY = 1, 2


@cache
def _files() -> dict[str, list[dict[str, Any]]]:
    return {
        path.name: json.loads(path.read_text(encoding="utf-8"))
        for path in sorted(TYPES_DIR.glob("*@*.json"))
    }


@cache
def resource_types() -> dict[str, tuple[str, int]]:
    """``Type@apiVersion`` -> (file, index of its ``ResourceType``), over every stored file."""
    found: dict[str, tuple[str, int]] = {}
    for name, types in _files().items():
        for index, entry in enumerate(types):
            if entry["$type"] == "ResourceType":
                found[entry["name"]] = (name, index)
    return found


class _Checker:
    def __init__(self, file: str) -> None:
        self.types = _files()[file]

    def resolve(self, reference: dict[str, str]) -> dict[str, Any]:
        ref = reference["$ref"]
        assert ref.startswith("#/"), ref
        return self.types[int(ref[2:])]

    def check(
        self,
        value: Any,
        schema: dict[str, Any],
        where: str,
        bicep_keys: frozenset[str] = frozenset(),
    ) -> Iterator[str]:
        if isinstance(value, Unknown) or value is None:
            return
        kind = schema["$type"]
        if kind == "AnyType":
            return
        if kind == "StringType":
            if not isinstance(value, str):
                yield f"{where}: {value!r} is not a string"
        elif kind == "IntegerType":
            if isinstance(value, bool) or not isinstance(value, int):
                yield f"{where}: {value!r} is not an integer"
        elif kind == "BooleanType":
            if not isinstance(value, bool):
                yield f"{where}: {value!r} is not a bool"
        elif kind == "StringLiteralType":
            if value != schema["value"]:
                yield f"{where}: {value!r} is not {schema['value']!r}"
        elif kind == "UnionType":
            attempts = [list(self.check(value, self.resolve(e), where)) for e in schema["elements"]]
            if all(attempts):
                allowed = [self.describe(self.resolve(e)) for e in schema["elements"]]
                yield f"{where}: {value!r} is none of {', '.join(allowed)}"
        elif kind == "ArrayType":
            if not isinstance(value, list):
                yield f"{where}: {value!r} is not an array"
                return
            for index, item in enumerate(value):
                yield from self.check(item, self.resolve(schema["itemType"]), f"{where}[{index}]")
        elif kind == "ObjectType":
            yield from self.check_object(value, schema.get("properties", {}),
                                         schema.get("additionalProperties"), where,
                                         bicep_keys=bicep_keys)  # fmt: skip
        elif kind == "DiscriminatedObjectType":
            yield from self.check_discriminated(value, schema, where, bicep_keys)
        else:
            yield f"{where}: schema type {kind} is not checked here"

    def check_discriminated(
        self, value: Any, schema: dict[str, Any], where: str, bicep_keys: frozenset[str]
    ) -> Iterator[str]:
        if not isinstance(value, dict):
            yield f"{where}: {value!r} is not an object"
            return
        key = schema["discriminator"]
        chosen = value.get(key)
        if isinstance(chosen, Unknown):
            return
        if chosen not in schema["elements"]:
            yield f"{where}.{key}: {chosen!r} is none of {sorted(schema['elements'])}"
            return
        element = self.resolve(schema["elements"][chosen])
        properties = {**schema.get("baseProperties", {}), **element.get("properties", {})}
        yield from self.check_object(value, properties, None, where, bicep_keys=bicep_keys)

    def check_object(
        self,
        value: Any,
        properties: dict[str, Any],
        additional: dict[str, str] | None,
        where: str,
        *,
        bicep_keys: frozenset[str] = frozenset(),
    ) -> Iterator[str]:
        if not isinstance(value, dict):
            yield f"{where}: {value!r} is not an object"
            return
        for key, item in value.items():
            path = f"{where}.{key}"
            if key in bicep_keys:
                continue
            if key in properties:
                declared = properties[key]
                if declared.get("flags", 0) & READ_ONLY:
                    yield f"{path}: read-only in the schema"
                    continue
                yield from self.check(item, self.resolve(declared["type"]), path)
            elif additional is not None:
                yield from self.check(item, self.resolve(additional), path)
            else:
                known = ", ".join(
                    sorted(k for k, p in properties.items() if not p.get("flags", 0) & READ_ONLY)
                )
                yield f"{path}: not a property of this type (it has: {known})"
        for key, declared in properties.items():
            if declared.get("flags", 0) & REQUIRED and key not in value:
                yield f"{where}.{key}: required by the schema but not set"

    def describe(self, schema: dict[str, Any]) -> str:
        if schema["$type"] == "StringLiteralType":
            return repr(schema["value"])
        return str(schema["$type"]).removesuffix("Type").lower()


def problems(type_reference: str, body: dict[str, Any], where: str) -> list[str]:
    """Everything in ``body`` (a resource as ARM receives it) that the schema of
    ``type_reference`` (``Type@apiVersion``) does not allow; ``where`` prefixes each message."""
    if type_reference not in resource_types():
        return [f"{where}: {type_reference} is not a resource type of the stored schemas"]
    file, index = resource_types()[type_reference]
    checker = _Checker(file)
    body_type = checker.resolve(checker.types[index]["body"])
    return list(checker.check(body, body_type, where, BICEP_ONLY_KEYS))


__all__ = ["TYPES_DIR", "problems", "resource_types"]

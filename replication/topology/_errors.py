"""Configuration errors as one line per problem: ``FILE: JSON.PATH: message``.

A key the model does not know is named, with the closest known key ("did you mean") and every
key known at that place, found by walking the pydantic model along the error's location
(:func:`known_keys`). The same reporting serves the topology document and a pattern's options,
so a misspelt option reads like a misspelt topology key::

    topology.json: tasks[0].options.replicaTimeToLife: unknown option for pattern
    'active_passive' (did you mean 'replicaTimeToLive'?); known: replicaTimeToLive
"""

from __future__ import annotations

import types
import typing
from collections.abc import Sequence
from typing import Any, Union

from pydantic import BaseModel, ValidationError

from replication.exceptions import ConfigurationError

Location = tuple[str | int, ...]


def json_path(location: Sequence[str | int]) -> str:
    """Format a pydantic error location as a JSON path: ``tasks[0].source.namespace``."""
    text = ""
    for part in location:
        if part == "[key]":
            # pydantic's marker for "the key itself" (a bad dict key); the path names the key.
            continue
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text or "$"


def _members(annotation: Any) -> list[Any]:
    """The types an annotation may hold: ``Annotated`` unwrapped, unions split."""
    if typing.get_origin(annotation) is typing.Annotated:
        return _members(typing.get_args(annotation)[0])
    if typing.get_origin(annotation) in (Union, types.UnionType):
        return [member for arg in typing.get_args(annotation) for member in _members(arg)]
    return [annotation]


def _field(model: type[BaseModel], key: str) -> Any:
    for name, field in model.model_fields.items():
        if key in (name, field.alias):
            return field.annotation
    return None


def _step(annotation: Any, part: str | int) -> Any:
    """The type found at ``part`` inside a value of type ``annotation`` (None: unknown)."""
    for member in _members(annotation):
        origin = typing.get_origin(member)
        if isinstance(part, int) and origin in (list, tuple, set, frozenset):
            return typing.get_args(member)[0]
        if isinstance(part, str) and origin is dict:
            return typing.get_args(member)[1]
        if isinstance(part, str) and isinstance(member, type) and issubclass(member, BaseModel):
            found = _field(member, part)
            if found is not None:
                return found
    return None


def known_keys(model: type[BaseModel], location: Location) -> list[str]:
    """The keys (aliases) of the record found at ``location`` inside ``model``, sorted; empty
    when the location does not lead to a record."""
    annotation: Any = model
    for part in location:
        annotation = _step(annotation, part)
        if annotation is None:
            return []
    records = [
        member
        for member in _members(annotation)
        if isinstance(member, type) and issubclass(member, BaseModel)
    ]
    return sorted(
        {field.alias or name for record in records for name, field in record.model_fields.items()}
    )


def format_validation_error(
    error: ValidationError,
    source: str,
    *,
    model: type[BaseModel] | None = None,
    prefix: Location = (),
    unknown: str = "unknown key",
    first_only: bool = False,
) -> ConfigurationError:
    """One line per problem: ``FILE: JSON.PATH: message``; the first names ``location``.

    ``model`` is the model that was validated (its keys are listed for an unknown key),
    ``prefix`` where its document sits in the file (``("tasks[0].options",)`` for a task's
    options), ``unknown`` what an unknown key is called there, and ``first_only`` keeps the
    first problem only.

    A misspelt key shows up twice in pydantic's report (an unknown key and a missing field);
    the two are merged into one "did you mean" line, so ``replicaTimeToLife`` names itself
    rather than a missing ``replicaTimeToLive``.
    """
    items = error.errors(include_url=False)
    missing = {
        (item["loc"][:-1], str(item["loc"][-1])) for item in items if item["type"] == "missing"
    }
    explained: set[tuple[Any, str]] = set()
    problems = []
    for item in items:
        message = item["msg"].removeprefix("Value error, ")
        if item["type"] == "extra_forbidden":
            parent, key = item["loc"][:-1], str(item["loc"][-1])
            message = _unknown_key(key, parent, missing, model, unknown)
            close = message.partition("(did you mean '")[2].partition("'")[0]
            if close:
                explained.add((parent, close))
        problems.append((item, json_path([*prefix, *item["loc"]]), message))
    lines = [
        (where, message)
        for item, where, message in problems
        if not (item["type"] == "missing" and (item["loc"][:-1], str(item["loc"][-1])) in explained)
    ]
    (location, message), *others = lines
    if first_only:
        others = []
    text = "".join([message, *(f"\n{source}: {where}: {what}" for where, what in others)])
    return ConfigurationError(text, source=source, location=location)


def _unknown_key(
    key: str,
    parent: Location,
    missing: set[tuple[Any, str]],
    model: type[BaseModel] | None,
    unknown: str,
) -> str:
    """``unknown key (did you mean 'x'?); known: a, b, x``: the closest of the keys known at
    that place (the missing ones first), and all of them."""
    import difflib  # only for a wrong topology: a good one loads without importing it

    known = known_keys(model, parent) if model is not None else []
    candidates = [name for where, name in missing if where == parent]
    close = difflib.get_close_matches(key, candidates, n=1) or difflib.get_close_matches(
        key, known, n=1
    )
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    if known:
        return f"{unknown}{hint}; known: {', '.join(known)}"
    return f"{unknown}{hint or ' (check the spelling; keys are camelCase)'}"


__all__ = ["format_validation_error", "json_path", "known_keys"]

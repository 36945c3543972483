"""Configuration errors as one line per problem: ``FILE: JSON.PATH: message``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from replication.exceptions import ConfigurationError


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


def format_validation_error(error: ValidationError, source: str) -> ConfigurationError:
    """One line per problem: ``FILE: JSON.PATH: message``; the first names ``location``.

    A misspelt key shows up twice in pydantic's report (an unknown key and a missing field);
    the two are merged into one "did you mean" line.
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
            candidates = [name for where, name in missing if where == parent]
            import difflib  # only for a wrong topology: a good one loads without importing it

            close = difflib.get_close_matches(key, candidates, n=1)
            if close:
                explained.add((parent, close[0]))
                message = f"unknown key (did you mean '{close[0]}'?)"
            else:
                message = "unknown key (check the spelling; keys are camelCase)"
        problems.append((item, json_path(item["loc"]), message))
    lines = [
        (where, message)
        for item, where, message in problems
        if not (item["type"] == "missing" and (item["loc"][:-1], str(item["loc"][-1])) in explained)
    ]
    (location, message), *others = lines
    text = "".join([message, *(f"\n{source}: {where}: {what}" for where, what in others)])
    return ConfigurationError(text, source=source, location=location)


__all__ = ["format_validation_error", "json_path"]

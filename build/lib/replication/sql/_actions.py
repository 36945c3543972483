"""Rule actions: SET and REMOVE statements applied, in order, to a copy of the message.

Docs ("Subscription Rule SQL Action Syntax", Considerations): SET creates or updates a property,
converting implicitly when the existing property has another type (an integer assigned over a
double stays a double); REMOVE deletes it; referencing a system property that does not exist
fails the action; a missing user property evaluates as unknown (SET stores null). Only the
writable system properties may be changed; ``sys.TimeToLive`` takes a TimeSpan string such as
``'0:2:0'`` or ``'1.00:00:00'``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from replication.envelope import Envelope

from ._compile import WRITABLE_SYSTEM_PROPERTIES, compile_node, find_user_property
from ._errors import SqlEvaluationError
from ._parser import Node, Property, RemoveAction, SetAction

Statement = Callable[[Envelope], Envelope]

_TIMESPAN = re.compile(
    r"^\s*(?P<sign>-)?(?:(?P<days>\d+)\.)?(?P<hours>\d+):(?P<minutes>\d+)"
    r"(?::(?P<seconds>\d+)(?:\.(?P<fraction>\d{1,7}))?)?\s*$"
)
_DAYS_ONLY = re.compile(r"^\s*(?P<sign>-)?(?P<days>\d+)\s*$")


def parse_timespan(text: str) -> timedelta:
    """.NET ``TimeSpan.Parse`` formats: ``[-][d.]hh:mm[:ss[.fffffff]]`` and ``[-]d``."""
    match = _TIMESPAN.match(text)
    if match is not None:
        hours, minutes = int(match["hours"]), int(match["minutes"])
        seconds = int(match["seconds"] or 0)
        if hours > 23 or minutes > 59 or seconds > 59:
            raise SqlEvaluationError(f"'{text}' is not a valid TimeSpan (a field is out of range)")
        fraction = match["fraction"] or "0"
        value = timedelta(
            days=int(match["days"] or 0),
            hours=hours,
            minutes=minutes,
            seconds=seconds,
            microseconds=int(fraction.ljust(7, "0")) // 10,
        )
        return -value if match["sign"] else value
    match = _DAYS_ONLY.match(text)
    if match is not None:
        value = timedelta(days=int(match["days"]))
        return -value if match["sign"] else value
    raise SqlEvaluationError(f"'{text}' is not a valid TimeSpan (expected [d.]hh:mm[:ss])")


def _system_value(name: str, field: str, value: Any) -> Any:
    if value is None:
        return None
    if field == "time_to_live":
        if isinstance(value, str):
            value = parse_timespan(value)
        if not isinstance(value, timedelta) or value <= timedelta(0):
            raise SqlEvaluationError(f"sys.{name} needs a positive TimeSpan, got {value!r}")
        return value
    if field == "scheduled_enqueue_time_utc":
        if isinstance(value, str):
            try:
                value = datetime.fromisoformat(value)
            except ValueError:
                raise SqlEvaluationError(f"sys.{name}: {value!r} is not a date") from None
        if not isinstance(value, datetime):
            raise SqlEvaluationError(f"sys.{name} needs a date, got {value!r}")
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if not isinstance(value, str):
        raise SqlEvaluationError(f"sys.{name} needs a string, got {value!r}")
    return value


def _converted(existing: Any, value: Any) -> Any:
    # C# implicit numeric conversion: an Int64 assigned over a Double stays a Double.
    if isinstance(existing, float) and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def _compile_set(node: SetAction) -> Statement:
    target = node.target
    evaluate = compile_node(node.value)
    if target.scope == "sys":
        field = _writable(target)

        def set_system(envelope: Envelope) -> Envelope:
            value = _system_value(target.name, field, evaluate(envelope))
            return envelope.replace(**{field: value})

        return set_system
    name = target.name

    def set_user(envelope: Envelope) -> Envelope:
        value = evaluate(envelope)
        key, existing = find_user_property(envelope.application_properties, name)
        return envelope.with_properties({key or name: _converted(existing, value)})

    return set_user


def _compile_remove(node: RemoveAction) -> Statement:
    target = node.target
    if target.scope == "sys":
        field = _writable(target)
        return lambda envelope: envelope.replace(**{field: None})
    name = target.name

    def remove_user(envelope: Envelope) -> Envelope:
        key, _ = find_user_property(envelope.application_properties, name)
        return envelope if key is None else envelope.with_properties(remove=(key,))

    return remove_user


def _writable(target: Property) -> str:
    field = WRITABLE_SYSTEM_PROPERTIES.get(target.name.lower())
    if field is None:
        raise SqlEvaluationError(f"sys.{target.name} is read-only: a rule action cannot change it")
    return field


def compile_statements(nodes: list[Node]) -> list[Statement]:
    statements: list[Statement] = []
    for node in nodes:
        if isinstance(node, SetAction):
            statements.append(_compile_set(node))
        elif isinstance(node, RemoveAction):
            statements.append(_compile_remove(node))
        else:  # pragma: no cover - the parser produces only these
            raise TypeError(type(node).__name__)
    return statements

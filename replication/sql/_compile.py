"""Compile a syntax tree into nested Python closures, evaluated once per message.

Values: ``None`` is SQL NULL and also the *unknown* of a missing user property (the docs treat
both the same way in operators); predicates return ``True``, ``False`` or ``None`` (unknown).
Type rules follow the docs' "C# operator binding": integers (Int64) promote to doubles;
strings compare ordinally and ``+`` concatenates; booleans only compare for (in)equality;
integer ``/`` truncates and ``%`` keeps the dividend's sign, as in C#; an operation between
incompatible types raises :class:`SqlEvaluationError` (Service Bus: FilterException).
"""

from __future__ import annotations

import math
import operator
import uuid
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from replication.envelope import Envelope

from ._errors import SqlEvaluationError
from ._like import LikePattern, compile_like
from ._parser import (
    Arithmetic,
    Comparison,
    Constant,
    Exists,
    Function,
    In,
    IsNull,
    Like,
    Logical,
    Node,
    Not,
    Property,
    Unary,
)
from ._system import BY_NAME, SYSTEM_PROPERTY_NAMES

Evaluator = Callable[[Envelope], Any]


def unknown_system_property(name: str) -> str:
    return f"sys.{name} is not a system property (known: {', '.join(SYSTEM_PROPERTY_NAMES)})"


_MISSING = object()


WRITABLE_SYSTEM_PROPERTIES: dict[str, str] = {
    key: prop.field for key, prop in BY_NAME.items() if prop.writable
}
"""``sys.`` properties a rule action may SET or REMOVE (lower-cased) -> Envelope field."""


def find_user_property(properties: Mapping[str, Any], name: str) -> tuple[str | None, Any]:
    """(actual key, value) of a user property, matching names case-insensitively."""
    value = properties.get(name, _MISSING)
    if value is not _MISSING:
        return name, value
    lowered = name.lower()
    for key, candidate in properties.items():
        if key.lower() == lowered:
            return key, candidate
    return None, None


def system_getter(name: str) -> Callable[[Envelope], Any]:
    """The getter of ``sys.<name>``; :class:`SqlEvaluationError` for names that do not exist."""
    prop = BY_NAME.get(name.lower())
    if prop is None:
        raise SqlEvaluationError(unknown_system_property(name))
    return operator.attrgetter(prop.field)


def _normalize(value: Any) -> Any:
    # The SDKs hand string values back as bytes; in the rule language they are strings.
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return value
    return value


def property_getter(node: Property) -> Evaluator:
    """Evaluator of a property reference (unknown for a missing user property)."""
    if node.scope == "sys":
        return system_getter(node.name)
    name = node.name
    lowered = name.lower()

    def user(envelope: Envelope) -> Any:
        properties = envelope.application_properties
        value = properties.get(name, _MISSING)
        if value is _MISSING:
            for key, candidate in properties.items():
                if key.lower() == lowered:
                    return _normalize(candidate)
            return None
        return _normalize(value)

    return user


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, datetime):
        return "datetime"
    if isinstance(value, timedelta):
        return "timespan"
    if isinstance(value, uuid.UUID):
        return "guid"
    return type(value).__name__


_ORDERING = {
    "=": operator.eq,
    "<>": operator.ne,
    "!=": operator.ne,
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
}


def compare(op: str, left: Any, right: Any) -> bool | None:
    """Three-valued comparison with the documented type rules."""
    if left is None or right is None:
        return None
    kind = _kind(left)
    if kind != _kind(right):
        raise SqlEvaluationError(
            f"cannot compare a {kind} ({left!r}) with a {_kind(right)} ({right!r})"
        )
    if kind in ("boolean", "guid") and op not in ("=", "<>", "!="):
        raise SqlEvaluationError(f"'{op}' is not defined for {kind} values")
    result: bool = _ORDERING[op](left, right)
    return result


def _csharp_integer_divide(left: int, right: int) -> int:
    quotient = abs(left) // abs(right)
    return quotient if (left >= 0) == (right >= 0) else -quotient


def _csharp_integer_remainder(left: int, right: int) -> int:
    return left - right * _csharp_integer_divide(left, right)


def _csharp_text(value: Any) -> str:
    # String concatenation formats booleans as C# does (True / False).
    if isinstance(value, bool):
        return "True" if value else "False"
    return str(value)


def arithmetic(op: str, left: Any, right: Any) -> Any:
    """Binary arithmetic with C# semantics; unknown in, unknown out."""
    if left is None or right is None:
        return None
    left_kind, right_kind = _kind(left), _kind(right)
    if op == "+" and "string" in (left_kind, right_kind):
        return _csharp_text(left) + _csharp_text(right)
    if left_kind == right_kind == "number":
        if isinstance(left, int) and isinstance(right, int):
            if op in ("/", "%") and right == 0:
                raise SqlEvaluationError("integer division by zero")
            if op == "/":
                return _csharp_integer_divide(left, right)
            if op == "%":
                return _csharp_integer_remainder(left, right)
        else:
            left, right = float(left), float(right)
            if op in ("/", "%") and right == 0.0:
                if op == "%" or left == 0.0 or math.isnan(left):
                    return math.nan
                return math.copysign(math.inf, left)
            if op == "%":
                # IEEE 754 remainder as C# computes it: an infinite dividend gives NaN (where
                # math.fmod raises), an infinite divisor leaves a finite dividend unchanged.
                return math.nan if math.isinf(left) else math.fmod(left, right)
        return {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}[op](
            left, right
        )
    temporal = {
        ("+", "datetime", "timespan"), ("-", "datetime", "timespan"), ("-", "datetime", "datetime"),
        ("+", "timespan", "timespan"), ("-", "timespan", "timespan"), ("+", "timespan", "datetime"),
    }  # fmt: skip
    if (op, left_kind, right_kind) in temporal:
        return left + right if op == "+" else left - right
    raise SqlEvaluationError(f"'{op}' is not defined between a {left_kind} and a {right_kind}")


def negate(op: str, value: Any) -> Any:
    if value is None:
        return None
    if _kind(value) == "number" or isinstance(value, timedelta):
        return -value if op == "-" else value
    raise SqlEvaluationError(f"unary '{op}' is not defined for a {_kind(value)}")


def like(value: Any, pattern: Any, escape: Any) -> bool | None:
    """``value LIKE pattern ESCAPE escape``, three-valued (see :mod:`._like` for the matcher)."""
    if value is None or pattern is None:
        return None
    if not isinstance(value, str) or not isinstance(pattern, str):
        raise SqlEvaluationError("LIKE needs string operands")
    if escape is not None and (not isinstance(escape, str) or len(escape) != 1):
        raise SqlEvaluationError(
            f"the ESCAPE character must be a string of length 1, got {escape!r}"
        )
    return compile_like(pattern, escape).matches(value)


def _and(left: Evaluator, right: Evaluator) -> Evaluator:
    def evaluate(envelope: Envelope) -> bool | None:
        a = left(envelope)
        if a is False:
            return False
        b = right(envelope)
        if b is False:
            return False
        if a is None or b is None:
            return None
        return True

    return evaluate


def _or(left: Evaluator, right: Evaluator) -> Evaluator:
    def evaluate(envelope: Envelope) -> bool | None:
        a = left(envelope)
        if a is True:
            return True
        b = right(envelope)
        if b is True:
            return True
        if a is None or b is None:
            return None
        return False

    return evaluate


def _in(operand: Evaluator, items: list[Evaluator], negated: bool) -> Evaluator:
    def evaluate(envelope: Envelope) -> bool | None:
        value = operand(envelope)
        if value is None:
            return None
        unknown = False
        for item in items:
            result = compare("=", value, item(envelope))
            if result is True:
                return not negated
            if result is None:
                unknown = True
        if unknown:
            return None
        return negated

    return evaluate


def _property_function(argument: Evaluator) -> Evaluator:
    def evaluate(envelope: Envelope) -> Any:
        name = argument(envelope)
        if name is None:
            return None
        if not isinstance(name, str):
            raise SqlEvaluationError(f"property() needs a string name, got {name!r}")
        scope, _, rest = name.partition(".")
        if rest and scope.lower() == "sys":
            return system_getter(rest)(envelope)
        if rest and scope.lower() == "user":
            name = rest
        return _normalize(find_user_property(envelope.application_properties, name)[1])

    return evaluate


def _constant_pattern(node: Like) -> LikePattern | None:
    """The compiled pattern when pattern and escape are usable constants, else None.

    A bad constant pattern is not an error here: like the other FilterExceptions it is raised
    when the filter is evaluated, by :func:`like`.
    """
    escape = node.escape
    if not isinstance(node.pattern, Constant) or not isinstance(escape, Constant | None):
        return None
    pattern_value = node.pattern.value
    escape_value = None if escape is None else escape.value
    if not isinstance(pattern_value, str) or not (
        escape_value is None or (isinstance(escape_value, str) and len(escape_value) == 1)
    ):
        return None
    try:
        return compile_like(pattern_value, escape_value)
    except SqlEvaluationError:
        return None


def _like(node: Like) -> Evaluator:
    value = compile_node(node.operand)
    negated = node.negated
    constant = _constant_pattern(node)
    if constant is not None:
        # Compiled once with the filter: the per-message cost is the match alone.
        matches = constant.matches

        def like_constant(envelope: Envelope) -> bool | None:
            operand = value(envelope)
            if operand is None:
                return None
            if not isinstance(operand, str):
                raise SqlEvaluationError("LIKE needs string operands")
            return matches(operand) != negated

        return like_constant
    pattern = compile_node(node.pattern)
    escape = compile_node(node.escape) if node.escape is not None else (lambda envelope: None)

    def like_(envelope: Envelope) -> bool | None:
        result = like(value(envelope), pattern(envelope), escape(envelope))
        return None if result is None else result != negated

    return like_


def compile_node(node: Node) -> Evaluator:
    """An evaluator for ``node``."""
    if isinstance(node, Constant):
        value = node.value
        return lambda envelope: value
    if isinstance(node, Property):
        return property_getter(node)
    if isinstance(node, IsNull):
        getter = property_getter(node.operand)
        if node.negated:
            return lambda envelope: getter(envelope) is not None
        return lambda envelope: getter(envelope) is None
    if isinstance(node, Exists):
        if node.operand.scope == "sys":
            getter = system_getter(node.operand.name)
            return lambda envelope: getter(envelope) is not None
        name = node.operand.name
        return lambda envelope: (
            find_user_property(envelope.application_properties, name)[0] is not None
        )
    if isinstance(node, Logical):
        left, right = compile_node(node.left), compile_node(node.right)
        return _and(left, right) if node.operator == "AND" else _or(left, right)
    if isinstance(node, Not):
        operand = compile_node(node.operand)

        def not_(envelope: Envelope) -> bool | None:
            value = operand(envelope)
            return None if value is None else not value

        return not_
    if isinstance(node, Comparison):
        op, left, right = node.operator, compile_node(node.left), compile_node(node.right)
        return lambda envelope: compare(op, left(envelope), right(envelope))
    if isinstance(node, Arithmetic):
        op, left, right = node.operator, compile_node(node.left), compile_node(node.right)
        return lambda envelope: arithmetic(op, left(envelope), right(envelope))
    if isinstance(node, Unary):
        op, operand = node.operator, compile_node(node.operand)
        return lambda envelope: negate(op, operand(envelope))
    if isinstance(node, In):
        return _in(compile_node(node.operand), [compile_node(i) for i in node.items], node.negated)
    if isinstance(node, Like):
        return _like(node)
    if isinstance(node, Function):
        if node.name == "newid":
            return lambda envelope: uuid.uuid4()
        return _property_function(compile_node(node.arguments[0]))
    raise TypeError(f"cannot compile {type(node).__name__}")  # pragma: no cover

"""The Service Bus SQL rule language: subscription filters and rule actions.

Correlation filters (:class:`CorrelationFilter`), the other kind of filter, live here too.

Used by the local emulator to evaluate subscription rules as Service Bus does, by the routing
and validation patterns for their conditions, and by ``python -m replication lint-rules`` to
reject, before deployment, any rule Service Bus would reject.

    >>> from replication.envelope import Envelope
    >>> SqlFilter("replication IS NULL AND sys.Label = 'order'").matches(
    ...     Envelope(subject="order"))
    True
    >>> action = SqlRuleAction("SET replication = 1; SET sys.TimeToLive = '0:2:0'")
    >>> replica = action.apply(Envelope())
    >>> replica.application_properties["replication"], replica.time_to_live
    (1, datetime.timedelta(seconds=120))

Expressions are parsed and compiled once, at construction; ``matches`` and ``apply`` only run
the compiled closures. Parse problems raise :class:`SqlSyntaxError` (with the 1-based
``column``); problems that depend on the message (comparing a string with a number, integer
division by zero) raise :class:`SqlEvaluationError`, Service Bus's FilterException.

Limits (Service Bus quotas): a filter or action is at most 1,024 characters, an action has at
most 32 statements.
"""

from __future__ import annotations

from replication.envelope import Envelope

from ._actions import compile_statements, parse_timespan
from ._compile import WRITABLE_SYSTEM_PROPERTIES, compile_node
from ._correlation import CORRELATION_FIELDS, CorrelationFilter
from ._errors import SqlEvaluationError, SqlSyntaxError
from ._parser import Node, RemoveAction, SetAction, parse_action, parse_filter

MAX_EXPRESSION_LENGTH = 1024
MAX_ACTION_STATEMENTS = 32


def _check_length(expression: str, what: str) -> None:
    if not isinstance(expression, str):
        raise TypeError(f"a {what} is a str, not {type(expression).__name__}")
    if len(expression) > MAX_EXPRESSION_LENGTH:
        raise SqlSyntaxError(
            f"a {what} is at most {MAX_EXPRESSION_LENGTH} characters long "
            f"(this one has {len(expression)})",
            expression=expression,
            column=MAX_EXPRESSION_LENGTH + 1,
            expected="a shorter expression",
        )


class SqlFilter:
    """A compiled SQL filter; ``matches`` is true only when the predicate is TRUE."""

    __slots__ = ("_evaluate", "expression")

    def __init__(self, expression: str) -> None:
        _check_length(expression, "filter")
        self.expression = expression
        self._evaluate = compile_node(parse_filter(expression))

    def evaluate(self, envelope: Envelope) -> bool | None:
        """The three-valued result: True, False, or None for unknown."""
        result: bool | None = self._evaluate(envelope)
        return result

    def matches(self, envelope: Envelope) -> bool:
        """True when the filter selects ``envelope`` (unknown does not select)."""
        return self._evaluate(envelope) is True

    def __repr__(self) -> str:
        return f"SqlFilter({self.expression!r})"


class SqlRuleAction:
    """A compiled rule action; ``apply`` returns a changed copy of the envelope."""

    __slots__ = ("_statements", "expression")

    def __init__(self, expression: str) -> None:
        _check_length(expression, "rule action")
        self.expression = expression
        nodes = parse_action(expression)
        if len(nodes) > MAX_ACTION_STATEMENTS:
            raise SqlSyntaxError(
                f"a rule action has at most {MAX_ACTION_STATEMENTS} statements "
                f"(this one has {len(nodes)})",
                expression=expression,
                column=nodes[MAX_ACTION_STATEMENTS].column,
            )
        for node in nodes:
            _check_writable(node, expression)
        self._statements = compile_statements(nodes)

    def apply(self, envelope: Envelope) -> Envelope:
        """The envelope after every statement, in order; ``envelope`` itself is unchanged."""
        for statement in self._statements:
            envelope = statement(envelope)
        return envelope

    def __repr__(self) -> str:
        return f"SqlRuleAction({self.expression!r})"


def _check_writable(node: Node, expression: str) -> None:
    if not isinstance(node, SetAction | RemoveAction) or node.target.scope != "sys":
        return
    if node.target.name.lower() not in WRITABLE_SYSTEM_PROPERTIES:
        raise SqlSyntaxError(
            f"sys.{node.target.name} is read-only: a rule action cannot change it",
            expression=expression,
            column=node.target.column,
            expected="a writable property",
        )


__all__ = [
    "CORRELATION_FIELDS",
    "MAX_ACTION_STATEMENTS",
    "MAX_EXPRESSION_LENGTH",
    "CorrelationFilter",
    "SqlEvaluationError",
    "SqlFilter",
    "SqlRuleAction",
    "SqlSyntaxError",
    "parse_timespan",
]

"""The two errors of the rule language: rejected text, and a failure while evaluating."""

from __future__ import annotations

from replication.exceptions import ReplicationError


class SqlSyntaxError(ReplicationError, ValueError):
    """The expression is not valid Service Bus SQL; Service Bus would reject the rule.

    ``column`` is the 1-based position of the problem in ``expression``; ``expected`` says what
    the grammar allowed there.
    """

    def __init__(self, message: str, *, expression: str, column: int, expected: str = "") -> None:
        self.expression = expression
        self.column = column
        self.expected = expected
        self.detail = message
        super().__init__(f"column {column}: {message}")


class SqlEvaluationError(ReplicationError):
    """Evaluating a valid expression against a message failed (Service Bus: FilterException),
    e.g. comparing a string with a number, or dividing an integer by zero."""

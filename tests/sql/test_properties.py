"""Property tests: the parser rejects bad text only with SqlSyntaxError, evaluation fails only
with SqlEvaluationError, and rule actions never mutate their input."""

from __future__ import annotations

import contextlib
import copy
import functools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from replication.envelope import Envelope
from replication.sql import SqlEvaluationError, SqlFilter, SqlRuleAction, SqlSyntaxError

WORDS = ["AND", "OR", "NOT", "IS", "NULL", "IN", "LIKE", "ESCAPE", "EXISTS", "SET", "REMOVE",
         "sys.", "user.", "TRUE", "1E5", "'x'", "é"]  # fmt: skip
ALPHABET = st.sampled_from([*"abcxyz019 ._-+*/%=<>!()[]\"',;\\\n\t", *WORDS])
TEXT = st.one_of(st.text(max_size=80), st.lists(ALPHABET, max_size=25).map(" ".join))


def _syntax_error_column(parse: type, text: str) -> int | None:
    try:
        parse(text)
    except SqlSyntaxError as error:
        return error.column
    return None


@settings(max_examples=2000, deadline=None)
@given(TEXT)
def test_filter_parsing_raises_only_syntax_errors(text: str) -> None:
    column = _syntax_error_column(SqlFilter, text)
    assert column is None or 1 <= column <= len(text) + 1


@settings(max_examples=2000, deadline=None)
@given(TEXT)
def test_action_parsing_raises_only_syntax_errors(text: str) -> None:
    column = _syntax_error_column(SqlRuleAction, text)
    assert column is None or 1 <= column <= len(text) + 1


values = st.one_of(
    st.none(), st.booleans(), st.integers(-1000, 1000), st.floats(allow_nan=False),
    st.text(max_size=5),
)  # fmt: skip
properties = st.dictionaries(st.sampled_from(["a", "b", "A", "c", "replication"]), values)

atoms = st.sampled_from(["a", "b", "c", "1", "2.5", "'x'", "NULL", "TRUE", "sys.Label", "-a"])


@st.composite
def _expressions(draw: st.DrawFn, depth: int) -> str:
    if depth > 2 or draw(st.booleans()):
        return draw(atoms)
    operator = draw(st.sampled_from(["+", "-", "*", "/", "%"]))
    return f"({draw(expressions(depth + 1))} {operator} {draw(expressions(depth + 1))})"


@functools.cache
def expressions(depth: int = 0) -> st.SearchStrategy[str]:
    """Arithmetic over ``atoms``, nested at most three deep. One strategy object per depth:
    hypothesis validates a strategy the first time it is drawn from, and building a new one
    for every nested draw made validation most of these tests' time."""
    return _expressions(depth)


@st.composite
def _predicates(draw: st.DrawFn, depth: int) -> str:
    choice = draw(st.integers(0, 6 if depth < 2 else 3))
    left, right = draw(expressions()), draw(expressions())
    if choice == 0:
        return f"{left} {draw(st.sampled_from(['=', '<>', '>', '<=']))} {right}"
    if choice == 1:
        name = draw(st.sampled_from(["a", "b", "replication"]))
        return f"{name} IS {draw(st.sampled_from(['', 'NOT']))} NULL"
    if choice == 2:
        return f"{left} {draw(st.sampled_from(['IN', 'NOT IN']))} ({left}, {right}, NULL)"
    if choice == 3:
        return f"{left} LIKE {draw(st.sampled_from(['%', 'x_', '[a-c]%']))!r}".replace('"', "'")
    if choice == 4:
        return f"NOT ({draw(predicates(depth + 1))})"
    joiner = "AND" if choice == 5 else "OR"
    return f"({draw(predicates(depth + 1))}) {joiner} ({draw(predicates(depth + 1))})"


@functools.cache
def predicates(depth: int = 0) -> st.SearchStrategy[str]:
    """Filter conditions over ``expressions``, one strategy object per depth (as above)."""
    return _predicates(depth)


@settings(max_examples=1000, deadline=None)
@given(predicates(), properties)
def test_valid_filters_evaluate_or_raise_only_evaluation_errors(
    expression: str, props: dict[str, Any]
) -> None:
    compiled = SqlFilter(expression)
    envelope = Envelope(subject="x", application_properties=props)
    with contextlib.suppress(SqlEvaluationError):
        assert compiled.evaluate(envelope) in (True, False, None)


@settings(max_examples=500, deadline=None)
@given(expressions(), properties)
def test_apply_never_mutates_its_input(expression: str, props: dict[str, Any]) -> None:
    envelope = Envelope(subject="x", application_properties=props)
    snapshot = copy.deepcopy(envelope)
    action = SqlRuleAction(f"SET a = {expression}; REMOVE b; SET sys.Label = 'changed'")
    try:
        result = action.apply(envelope)
    except SqlEvaluationError:
        result = None
    assert envelope == snapshot
    if result is not None:
        assert result.subject == "changed"
        assert "b" not in result.application_properties

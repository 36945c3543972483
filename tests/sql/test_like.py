"""LIKE: the segment matcher agrees with a plain regular-expression translation, and patterns
that make a backtracking matcher take hours finish at once.

The reference below is the translation the library used before (one regex, ``%`` -> ``.*``):
correct, but exponential on patterns such as ``'%a%a%a%b'``. The property tests run it only on
short values, where its backtracking is harmless.
"""

from __future__ import annotations

import re
import threading
import warnings
from collections.abc import Callable

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from replication.envelope import Envelope
from replication.sql import SqlEvaluationError, SqlFilter
from replication.sql._like import LikePattern


def reference_regex(pattern: str, escape: str | None) -> re.Pattern[str]:
    """The old translation of a LIKE pattern to one regular expression (may raise re.error)."""
    parts: list[str] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if escape is not None and char == escape:
            if i + 1 >= len(pattern):
                raise SqlEvaluationError("ends with its escape character")
            parts.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        if char == "%":
            parts.append(".*")
        elif char == "_":
            parts.append(".")
        elif char == "[":
            end = pattern.find("]", i + 2)
            if end >= 0:
                body = pattern[i + 1 : end]
                negated = body.startswith("^")
                body = body[1:] if negated else body
                escaped = "".join(
                    "-" if c == "-" and 0 < k < len(body) - 1 else re.escape(c)
                    for k, c in enumerate(body)
                )
                parts.append(f"[{'^' if negated else ''}{escaped}]")
                i = end + 1
                continue
            parts.append(re.escape(char))
        else:
            parts.append(re.escape(char))
        i += 1
    with warnings.catch_warnings():
        # Python warns that '--' in a set may mean set difference some day.
        warnings.simplefilter("ignore", FutureWarning)
        return re.compile("".join(parts), re.DOTALL)


VALUES = st.text(alphabet="abc-]^!\n", max_size=12)

# Well-formed pieces: every pattern built from them means the same to both matchers.
PIECES = st.sampled_from(
    ["a", "b", "c", "-", "^", "]", "%", "%", "_", "[ab]", "[^a]", "[a-b]", "[^b-c]", "[]a]",
    "[a-]", "[-c]", "[a-b-]", "!%", "!_", "![", "!!", "!a"]
)  # fmt: skip


@settings(max_examples=2000, deadline=None)
@given(st.lists(PIECES, max_size=8).map("".join), VALUES)
def test_agrees_with_the_regex_translation(pattern: str, value: str) -> None:
    expected = reference_regex(pattern, "!").fullmatch(value) is not None
    assert LikePattern(pattern, "!").matches(value) is expected


@settings(max_examples=2000, deadline=None)
@given(
    st.text(alphabet="ab%_[]^-!", max_size=10),
    VALUES,
    st.sampled_from([None, "!", "%", "[", "]"]),
)
def test_agrees_with_the_regex_translation_on_any_text(
    pattern: str, value: str, escape: str | None
) -> None:
    # '[^]' is where the two differ on purpose: the old translation handed Python an empty
    # negated set, which swallowed what followed; here a range needs a member before its ']'.
    assume("[^]" not in pattern)
    try:
        reference = reference_regex(pattern, escape)
    except SqlEvaluationError:
        with pytest.raises(SqlEvaluationError):
            LikePattern(pattern, escape)
        return
    except re.error:
        # A reversed range ('[b-a]'): an error either way, now the library's own.
        with pytest.raises(SqlEvaluationError, match="below its start"):
            LikePattern(pattern, escape)
        return
    assert LikePattern(pattern, escape).matches(value) is (reference.fullmatch(value) is not None)


@pytest.mark.parametrize(
    ("pattern", "value", "expected"),
    [
        ("[^]]", "a", True),
        ("[^]]", "]", False),
        ("[^]", "[^]", True),
        ("[]", "[]", True),
        ("%", "", True),
        ("_%_", "a", False),
        ("a%b%a", "aba", True),
        ("a%b%a", "ab", False),
        ("%ab%ab%", "abab", True),
        ("%ab%ab%", "aba", False),
    ],
)
def test_edge_cases(pattern: str, value: str, expected: bool) -> None:
    assert LikePattern(pattern).matches(value) is expected


def _finishes(work: Callable[[], object], seconds: float = 10.0) -> None:
    """Run ``work`` in a thread and fail if it is still running after ``seconds``."""
    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "LIKE is still matching: the matcher backtracks"


PATHOLOGICAL = [
    ("%a%a%a%b", "a" * 1_000),
    ("%a%a%a%a%a%a%a%a%a%a%b", "a" * 10_000),
    ("%_%_%_%_%_%_%_%_%b", "a" * 10_000),
    ("%[a]%[ab]%[^b]%[a-c]%b", "a" * 10_000),
    ("%aaaaaaaaab%", "a" * 100_000),
    ("%a_a_a_a_a_a_a_a_b%", "a" * 100_000),
]


@pytest.mark.parametrize(("pattern", "value"), PATHOLOGICAL, ids=[p for p, _ in PATHOLOGICAL])
def test_pathological_patterns_finish(pattern: str, value: str) -> None:
    # The old translation took ~30 s on the first pair and far longer on the others.
    results: list[bool | None] = []
    message = Envelope(application_properties={"value": value, "pattern": pattern})
    _finishes(
        lambda: results.extend(
            [
                SqlFilter(f"value LIKE '{pattern}'").evaluate(message),
                SqlFilter("value LIKE pattern").evaluate(message),
            ]
        )
    )
    assert results == [False, False]

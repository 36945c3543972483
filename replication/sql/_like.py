"""LIKE patterns, matched in O(len(value) x len(pattern)) at worst, whatever the pattern.

Filters run inside the Function on every message, and a LIKE pattern may come from a message
property (``color LIKE pattern``), so matching must not depend on the pattern being kind. A
pattern translated to one regular expression (``%`` -> ``.*``) backtracks: ``'%a%a%a%b'``
against a thousand ``a`` takes tens of seconds. Instead the pattern is cut at its ``%`` into
segments of one-character atoms (a literal, ``_``, a ``[...]`` / ``[^...]`` range), and:

- without ``%`` the value has the segment's length and matches it at 0;
- otherwise the first segment is matched at the start, the last at the end, and each one in
  between at its leftmost place after the previous one. Leftmost is always right: whatever a
  later place would allow, the ``%`` after the segment absorbs the difference.

Each segment has a fixed width and no repetition, so finding it is at most one comparison per
(position, atom); a segment of plain text uses ``str.find`` / ``startswith``, one with wildcards
a regular expression with no quantifier (``re`` cannot backtrack over one).

Pattern syntax (the Service Bus docs, T-SQL style): ``%`` any run of characters, ``_`` any one
character (newlines too), ``[abc]`` / ``[a-c]`` one of a set, ``[^...]`` one not in it. The
range closes at the first ``]`` after at least one member (so ``[]]`` is the set of ``]``);
a ``[`` with no such ``]`` is a literal. Inside a range ``-`` between two members spans them and
is a literal first or last; the ESCAPE character is not special inside a range. Outside, the
ESCAPE character makes the next character literal.

Errors (:class:`SqlEvaluationError`, raised when the pattern is compiled): a pattern ending in
its escape character; a range whose end is below its start (``[z-a]``).
"""

from __future__ import annotations

import dataclasses
import functools
import re

from ._errors import SqlEvaluationError


@dataclasses.dataclass(frozen=True, slots=True)
class _Segment:
    """A run of one-character atoms between two ``%``: plain ``text`` or a ``regex``."""

    width: int
    text: str | None
    regex: re.Pattern[str] | None

    def matches_at(self, value: str, position: int) -> bool:
        """True when the segment matches ``value`` at ``position`` (enough room is checked)."""
        if self.text is not None:
            return value.startswith(self.text, position)
        assert self.regex is not None
        return self.regex.match(value, position) is not None

    def find(self, value: str, start: int, end: int) -> int:
        """Where the segment ends at its leftmost match inside ``value[start:end]``, or -1."""
        if self.text is not None:
            found = value.find(self.text, start, end)
            return -1 if found < 0 else found + self.width
        assert self.regex is not None
        match = self.regex.search(value, start, end)
        return -1 if match is None else match.end()


def _code_point(char: str) -> str:
    # \U escapes are valid inside and outside a character class, whatever the character.
    return f"\\U{ord(char):08x}"


def _range_regex(pattern: str, body: str, negated: bool) -> str:
    members: list[str] = []
    k = 0
    while k < len(body):
        if k + 2 < len(body) and body[k + 1] == "-":
            low, high = body[k], body[k + 2]
            if low > high:
                raise SqlEvaluationError(
                    f"LIKE pattern {pattern!r} has the range {low}-{high}, whose end is below "
                    "its start"
                )
            members.append(f"{_code_point(low)}-{_code_point(high)}")
            k += 3
        else:
            members.append(_code_point(body[k]))
            k += 1
    return f"[{'^' if negated else ''}{''.join(members)}]"


def _segments(pattern: str, escape: str | None) -> list[list[tuple[str, str | None]]]:
    """The ``%``-separated segments, each a list of (regex, literal character or None)."""
    segments: list[list[tuple[str, str | None]]] = [[]]
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if escape is not None and char == escape:
            if i + 1 >= len(pattern):
                raise SqlEvaluationError(f"LIKE pattern {pattern!r} ends with its escape character")
            segments[-1].append((_code_point(pattern[i + 1]), pattern[i + 1]))
            i += 2
            continue
        if char == "%":
            segments.append([])
        elif char == "_":
            segments[-1].append((".", None))
        elif char == "[":
            negated = pattern.startswith("^", i + 1)
            first = i + 2 if negated else i + 1
            end = pattern.find("]", first + 1)
            if end >= 0:
                segments[-1].append((_range_regex(pattern, pattern[first:end], negated), None))
                i = end + 1
                continue
            segments[-1].append((_code_point(char), char))
        else:
            segments[-1].append((_code_point(char), char))
        i += 1
    return segments


def _segment(atoms: list[tuple[str, str | None]]) -> _Segment:
    literals = [literal for _, literal in atoms]
    if all(literal is not None for literal in literals):
        return _Segment(len(atoms), "".join(c for c in literals if c is not None), None)
    regex = re.compile("".join(part for part, _ in atoms), re.DOTALL)
    return _Segment(len(atoms), None, regex)


class LikePattern:
    """A compiled LIKE pattern; :meth:`matches` is true when the whole value matches."""

    __slots__ = ("_exact", "_first", "_last", "_middle", "pattern")

    def __init__(self, pattern: str, escape: str | None = None) -> None:
        self.pattern = pattern
        first, *rest = [_segment(atoms) for atoms in _segments(pattern, escape)]
        self._exact = not rest
        self._first = first
        self._last = rest[-1] if rest else first
        self._middle = tuple(segment for segment in rest[:-1] if segment.width)

    def matches(self, value: str) -> bool:
        first, last = self._first, self._last
        if self._exact:
            return len(value) == first.width and first.matches_at(value, 0)
        end = len(value) - last.width
        if end < first.width or not first.matches_at(value, 0):
            return False
        if not last.matches_at(value, end):
            return False
        position = first.width
        for segment in self._middle:
            position = segment.find(value, position, end)
            if position < 0:
                return False
        return True

    def __repr__(self) -> str:
        return f"LikePattern({self.pattern!r})"


@functools.lru_cache(maxsize=256)
def compile_like(pattern: str, escape: str | None) -> LikePattern:
    """The compiled pattern, cached: patterns read from message properties repeat too."""
    return LikePattern(pattern, escape)


__all__ = ["LikePattern", "compile_like"]

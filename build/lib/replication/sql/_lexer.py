"""Tokens of the Service Bus SQL rule language (filters and actions share them)."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable

from ._errors import SqlSyntaxError

Fail = Callable[..., SqlSyntaxError]

KEYWORDS = frozenset(
    {
        "AND", "OR", "NOT", "IS", "NULL", "IN", "LIKE", "ESCAPE", "EXISTS", "TRUE", "FALSE",
        "SET", "REMOVE",
    }
)  # fmt: skip

OPERATORS = (
    "<>",
    "!=",
    ">=",
    "<=",
    "=",
    ">",
    "<",
    "+",
    "-",
    "*",
    "/",
    "%",
    "(",
    ")",
    ",",
    ".",
    ";",
)


class Kind(enum.Enum):
    KEYWORD = "keyword"
    IDENTIFIER = "identifier"
    INTEGER = "integer"
    DECIMAL = "decimal"
    APPROXIMATE = "approximate number"
    STRING = "string"
    OPERATOR = "operator"
    END = "end of input"


@dataclasses.dataclass(frozen=True, slots=True)
class Token:
    kind: Kind
    text: str
    column: int  # 1-based
    value: object = None

    def describe(self) -> str:
        if self.kind is Kind.END:
            return "end of input"
        return f"'{self.text}'"


def _is_identifier_start(char: str) -> bool:
    return char.isalpha()


def _is_identifier_part(char: str) -> bool:
    # .NET Char.IsDigit is the Unicode decimal-digit category, i.e. str.isdecimal.
    return char.isalpha() or char.isdecimal() or char == "_"


def _is_digit(char: str) -> bool:
    return "0" <= char <= "9"


def tokenize(text: str) -> list[Token]:
    """Split ``text`` into tokens; raises :class:`SqlSyntaxError` with the column on bad input."""
    tokens: list[Token] = []
    i = 0
    length = len(text)

    def fail(message: str, at: int, expected: str = "") -> SqlSyntaxError:
        return SqlSyntaxError(message, expression=text, column=at + 1, expected=expected)

    while i < length:
        char = text[i]
        if char.isspace():
            i += 1
            continue
        start = i
        if char == "'":
            value, i = _delimited(text, i, "'", "'", fail, "string constant")
            tokens.append(Token(Kind.STRING, text[start:i], start + 1, value))
        elif char == '"':
            value, i = _delimited(text, i, '"', '"', fail, "quoted identifier")
            tokens.append(Token(Kind.IDENTIFIER, text[start:i], start + 1, value))
        elif char == "[":
            value, i = _delimited(text, i, "[", "]", fail, "delimited identifier")
            tokens.append(Token(Kind.IDENTIFIER, text[start:i], start + 1, value))
        elif _is_digit(char) or (char == "." and i + 1 < length and _is_digit(text[i + 1])):
            token, i = _number(text, i, fail)
            tokens.append(token)
        elif _is_identifier_start(char):
            while i < length and _is_identifier_part(text[i]):
                i += 1
            word = text[start:i]
            if word.upper() in KEYWORDS:
                tokens.append(Token(Kind.KEYWORD, word, start + 1, word.upper()))
            else:
                tokens.append(Token(Kind.IDENTIFIER, word, start + 1, word))
        else:
            for operator in OPERATORS:
                if text.startswith(operator, i):
                    tokens.append(Token(Kind.OPERATOR, operator, start + 1, operator))
                    i += len(operator)
                    break
            else:
                raise fail(f"unexpected character {char!r}", i)
    tokens.append(Token(Kind.END, "", length + 1))
    return tokens


def _delimited(
    text: str, i: int, opening: str, closing: str, fail: Fail, what: str
) -> tuple[str, int]:
    """Read from the opening delimiter at ``i``; a doubled closing delimiter is a literal one."""
    parts: list[str] = []
    j = i + 1
    while True:
        end = text.find(closing, j)
        if end < 0:
            raise fail(f"unterminated {what}", i, f"closing {closing}")
        parts.append(text[j:end])
        if text.startswith(closing * 2, end):
            parts.append(closing)
            j = end + 2
            continue
        return "".join(parts), end + 1


def _number(text: str, i: int, fail: Fail) -> tuple[Token, int]:
    start = i
    length = len(text)
    while i < length and _is_digit(text[i]):
        i += 1
    kind = Kind.INTEGER
    if i < length and text[i] == ".":
        kind = Kind.DECIMAL
        i += 1
        while i < length and _is_digit(text[i]):
            i += 1
    if i < length and text[i] in "eE":
        j = i + 1
        if j < length and text[j] in "+-":
            j += 1
        if j < length and _is_digit(text[j]):
            kind = Kind.APPROXIMATE
            i = j
            while i < length and _is_digit(text[i]):
                i += 1
        else:
            raise fail("malformed exponent", i, "digits after E")
    if i < length and _is_identifier_part(text[i]):
        raise fail(f"malformed number {text[start : i + 1]!r}", start)
    literal = text[start:i]
    value: object = int(literal) if kind is Kind.INTEGER else float(literal)
    if kind is Kind.INTEGER and not -(2**63) <= int(literal) < 2**63:
        raise fail("integer constant out of the Int64 range", start)
    return Token(kind, literal, start + 1, value), i

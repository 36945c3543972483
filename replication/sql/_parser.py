"""Parser for Service Bus SQL filters and actions: text -> syntax tree.

Grammar and precedence (docs: "Subscription Rule SQL Filter Syntax" and "... SQL Rule Action
Syntax"), loosest first::

    OR  <  AND  <  NOT  <  comparison, IS [NOT] NULL, [NOT] IN, [NOT] LIKE  <  + -  <  * / %
        <  unary + -  <  constants, properties, functions, EXISTS, ( ... )

Predicates (boolean results) and expressions (values) are told apart while parsing, so
``a + (b = 1)`` and ``NOT 5`` are syntax errors, as in Service Bus.

The syntax tree's nodes are frozen dataclasses compared by identity (``eq=False``): nothing
compares or hashes two trees by value (:mod:`._compile` turns a tree into functions once), and
each generated ``__eq__`` and ``__hash__`` is compiled from source when this module is imported,
which every start of the local host does (loading a topology parses its rules): 15 nodes, about
0.7 % of ``run``'s start-up instructions (issue 26).
"""

from __future__ import annotations

import dataclasses

from ._errors import SqlSyntaxError
from ._lexer import Kind, Token, tokenize
from ._system import BY_NAME, SYSTEM_PROPERTY_NAMES

SCOPES = ("sys", "user")
FUNCTIONS = ("newid", "property", "p")
COMPARISONS = ("=", "<>", "!=", ">", ">=", "<", "<=")


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class Node:
    column: int


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class Constant(Node):
    value: object


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class Property(Node):
    scope: str  # "sys" or "user"
    name: str

    def describe(self) -> str:
        return f"{self.scope}.{self.name}"


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class Function(Node):
    name: str
    arguments: tuple[Node, ...]


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class Unary(Node):
    operator: str
    operand: Node


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class Arithmetic(Node):
    operator: str
    left: Node
    right: Node


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class Comparison(Node):
    operator: str
    left: Node
    right: Node


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class Logical(Node):
    operator: str  # "AND" | "OR"
    left: Node
    right: Node


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class Not(Node):
    operand: Node


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class IsNull(Node):
    operand: Property
    negated: bool


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class In(Node):
    operand: Node
    items: tuple[Node, ...]
    negated: bool


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class Like(Node):
    operand: Node
    pattern: Node
    escape: Node | None
    negated: bool


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class Exists(Node):
    operand: Property


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class SetAction(Node):
    target: Property
    value: Node


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class RemoveAction(Node):
    target: Property


_VALUE_TOKENS = (Kind.IDENTIFIER, Kind.STRING, Kind.INTEGER, Kind.DECIMAL, Kind.APPROXIMATE)

PREDICATES = (Comparison, Logical, Not, IsNull, In, Like, Exists)


def is_predicate(node: Node) -> bool:
    return isinstance(node, PREDICATES)


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = tokenize(text)
        self.position = 0

    # ------------------------------------------------------------------ token helpers
    @property
    def current(self) -> Token:
        return self.tokens[self.position]

    def advance(self) -> Token:
        token = self.tokens[self.position]
        if token.kind is not Kind.END:
            self.position += 1
        return token

    def error(self, message: str, token: Token | None = None, expected: str = "") -> SqlSyntaxError:
        token = token or self.current
        return SqlSyntaxError(message, expression=self.text, column=token.column, expected=expected)

    def expected(self, what: str) -> SqlSyntaxError:
        return self.error(f"expected {what}, found {self.current.describe()}", expected=what)

    def at_keyword(self, *words: str) -> bool:
        return self.current.kind is Kind.KEYWORD and self.current.value in words

    def at_operator(self, *operators: str) -> bool:
        return self.current.kind is Kind.OPERATOR and self.current.value in operators

    def take_keyword(self, word: str) -> Token:
        if not self.at_keyword(word):
            raise self.expected(word)
        return self.advance()

    def take_operator(self, operator: str) -> Token:
        if not self.at_operator(operator):
            raise self.expected(f"'{operator}'")
        return self.advance()

    def finish(self) -> None:
        if self.current.kind is not Kind.END:
            raise self.error(
                f"unexpected {self.current.describe()} after a complete expression",
                expected="end of input",
            )

    # ------------------------------------------------------------------ predicates
    def predicate(self) -> Node:
        node = self.or_expression()
        if not is_predicate(node):
            raise SqlSyntaxError(
                "a filter must be a predicate (a comparison, IS NULL, IN, LIKE or EXISTS)",
                expression=self.text,
                column=node.column,
                expected="a predicate",
            )
        return node

    def or_expression(self) -> Node:
        left = self.and_expression()
        while self.at_keyword("OR"):
            token = self.advance()
            right = self.and_expression()
            left = Logical(token.column, "OR", self.boolean(left), self.boolean(right))
        return left

    def and_expression(self) -> Node:
        left = self.not_expression()
        while self.at_keyword("AND"):
            token = self.advance()
            right = self.not_expression()
            left = Logical(token.column, "AND", self.boolean(left), self.boolean(right))
        return left

    def not_expression(self) -> Node:
        if self.at_keyword("NOT"):
            token = self.advance()
            return Not(token.column, self.boolean(self.not_expression()))
        return self.comparison()

    def boolean(self, node: Node) -> Node:
        if not is_predicate(node):
            raise SqlSyntaxError(
                "AND, OR and NOT need predicates (comparisons, IS NULL, IN, LIKE, EXISTS)",
                expression=self.text,
                column=node.column,
                expected="a predicate",
            )
        return node

    def value(self, node: Node) -> Node:
        if is_predicate(node):
            raise SqlSyntaxError(
                "a predicate cannot be used as a value here",
                expression=self.text,
                column=node.column,
                expected="an expression",
            )
        return node

    def comparison(self) -> Node:
        left = self.additive()
        if self.at_operator(*COMPARISONS):
            token = self.advance()
            right = self.additive()
            return Comparison(token.column, str(token.value), self.value(left), self.value(right))
        if self.at_keyword("IS"):
            token = self.advance()
            negated = bool(self.at_keyword("NOT") and self.advance())
            self.take_keyword("NULL")
            if not isinstance(left, Property):
                raise self.error("IS [NOT] NULL applies to a property", token, "a property")
            return IsNull(token.column, left, negated)
        negated = False
        if self.at_keyword("NOT"):
            nxt = self.tokens[self.position + 1]
            if not (nxt.kind is Kind.KEYWORD and nxt.value in ("IN", "LIKE")):
                raise self.error("expected IN or LIKE after NOT", nxt, "IN or LIKE")
            self.advance()
            negated = True
        if self.at_keyword("IN"):
            token = self.advance()
            self.take_operator("(")
            items = [self.value(self.additive())]
            while self.at_operator(","):
                self.advance()
                items.append(self.value(self.additive()))
            self.take_operator(")")
            return In(token.column, self.value(left), tuple(items), negated)
        if self.at_keyword("LIKE"):
            token = self.advance()
            pattern = self.value(self.additive())
            escape = None
            if self.at_keyword("ESCAPE"):
                self.advance()
                escape = self.value(self.additive())
            return Like(token.column, self.value(left), pattern, escape, negated)
        if self.current.kind in _VALUE_TOKENS:
            raise self.error(
                f"unexpected {self.current.describe()} after an expression",
                expected="an operator",
            )
        return left

    # ------------------------------------------------------------------ expressions
    def additive(self) -> Node:
        left = self.multiplicative()
        while self.at_operator("+", "-"):
            token = self.advance()
            right = self.multiplicative()
            left = Arithmetic(token.column, str(token.value), self.value(left), self.value(right))
        return left

    def multiplicative(self) -> Node:
        left = self.unary()
        while self.at_operator("*", "/", "%"):
            token = self.advance()
            right = self.unary()
            left = Arithmetic(token.column, str(token.value), self.value(left), self.value(right))
        return left

    def unary(self) -> Node:
        if self.at_operator("+", "-"):
            token = self.advance()
            operand = self.value(self.unary())
            if token.value == "-" and isinstance(operand, Constant):
                value = operand.value
                if isinstance(value, int | float) and not isinstance(value, bool):
                    return Constant(token.column, -value)
            return Unary(token.column, str(token.value), operand)
        return self.primary()

    def primary(self) -> Node:
        token = self.current
        if token.kind in (Kind.INTEGER, Kind.DECIMAL, Kind.APPROXIMATE, Kind.STRING):
            self.advance()
            return Constant(token.column, token.value)
        if token.kind is Kind.KEYWORD:
            if token.value in ("TRUE", "FALSE"):
                self.advance()
                return Constant(token.column, token.value == "TRUE")
            if token.value == "NULL":
                self.advance()
                return Constant(token.column, None)
            if token.value == "EXISTS":
                self.advance()
                self.take_operator("(")
                operand = self.property()
                self.take_operator(")")
                return Exists(token.column, operand)
            raise self.expected("an expression")
        if token.kind is Kind.OPERATOR and token.value == "(":
            self.advance()
            inner = self.or_expression()
            self.take_operator(")")
            return inner
        if token.kind is Kind.IDENTIFIER:
            nxt = self.tokens[self.position + 1]
            is_call = nxt.kind is Kind.OPERATOR and nxt.value == "("
            if is_call and token.text == token.value:
                return self.function()
            return self.property()
        raise self.expected("an expression")

    def function(self) -> Node:
        token = self.advance()
        name = str(token.value).lower()
        if name not in FUNCTIONS:
            raise self.error(
                f"unknown function '{token.text}' (known: newid(), property(name), p(name))",
                token,
                "newid, property or p",
            )
        self.take_operator("(")
        arguments: list[Node] = []
        if not self.at_operator(")"):
            arguments.append(self.value(self.additive()))
            while self.at_operator(","):
                self.advance()
                arguments.append(self.value(self.additive()))
        closing = self.take_operator(")")
        wanted = 0 if name == "newid" else 1
        if len(arguments) != wanted:
            raise self.error(f"{name}() takes {wanted} argument(s), got {len(arguments)}", closing)
        return Function(token.column, "property" if name == "p" else name, tuple(arguments))

    def property(self) -> Property:
        token = self.current
        if token.kind is not Kind.IDENTIFIER:
            raise self.expected("a property name")
        self.advance()
        first = str(token.value)
        if self.at_operator("."):
            self.advance()
            if first.lower() not in SCOPES or token.text != first:
                raise self.error(
                    f"unknown scope '{first}' (the scope is sys or user)", token, "sys or user"
                )
            name_token = self.current
            if name_token.kind is not Kind.IDENTIFIER:
                raise self.expected("a property name")
            self.advance()
            scope, name = first.lower(), str(name_token.value)
            if scope == "sys" and name.lower() not in BY_NAME:
                raise self.error(
                    f"sys.{name} is not a system property (known: "
                    f"{', '.join(SYSTEM_PROPERTY_NAMES)})",
                    name_token,
                    "a system property name",
                )
            return Property(token.column, scope, name)
        return Property(token.column, "user", first)

    # ------------------------------------------------------------------ actions
    def statements(self) -> list[Node]:
        actions: list[Node] = []
        while self.current.kind is not Kind.END:
            if self.at_keyword("SET"):
                token = self.advance()
                target = self.property()
                self.take_operator("=")
                actions.append(SetAction(token.column, target, self.value(self.additive())))
            elif self.at_keyword("REMOVE"):
                token = self.advance()
                actions.append(RemoveAction(token.column, self.property()))
            else:
                raise self.expected("SET or REMOVE")
            while self.at_operator(";", ","):
                self.advance()
        if not actions:
            raise self.expected("SET or REMOVE")
        return actions


def parse_filter(text: str) -> Node:
    """The syntax tree of a filter expression (a predicate)."""
    parser = _Parser(text)
    node = parser.predicate()
    parser.finish()
    return node


def parse_action(text: str) -> list[Node]:
    """The statements of a rule action, in order."""
    parser = _Parser(text)
    return parser.statements()

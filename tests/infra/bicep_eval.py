"""What ``infra/main.bicep`` would deploy for given parameters, evaluated without a Bicep compiler.

The Bicep compiler (a .NET program) cannot be installed here, and pycep-parser, which the other
infrastructure tests use for structure, is no evaluator: its tree drops the safe-access ``.?``
and binds ``a.b == 'c' ? x : y`` as ``a.(b == ('c' ? x : y))``. This module parses the subset of
Bicep our templates use with a Lark grammar (Lark does the parsing; the grammar is below) and
interprets it: parameters (rendered values or defaults), variables, ``if`` conditions, ``for``
loops, modules with their parameters and outputs, string interpolation, ``.?``, ternaries and the
handful of functions the templates call. The result is every resource the deployment would
create, with its type, API version, full name and body, as ARM receives it.

What cannot be known before deployment stays :class:`Unknown` (``uniqueString``, ``guid``,
resource ids, the tenant, a created resource's runtime properties): those values are never
compared, only counted. A construct outside the subset (an unknown function, a loop over an
unknown array, a condition that depends on an unknown value) raises :class:`BicepEvalError`
instead of being guessed, so a template change the evaluator does not understand fails the tests
loudly. Properties whose value is ``null`` are left out of the body, as ARM does not set them.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from lark import Lark, Token, Tree

GRAMMAR = r"""
start: _NL? (declaration (_NL declaration)*)? _NL?

declaration: decorator* statement
decorator: "@" NAME "(" _NL? (expr (_argsep expr)*)? _NL? ")" _NL
?statement: target_scope | param | var | resource | module | output
target_scope: "targetScope" "=" expr
param: "param" NAME NAME ("=" expr)?
var: "var" NAME "=" expr
resource: "resource" NAME STRING EXISTING? "=" body
module: "module" NAME STRING "=" body
output: "output" NAME NAME "=" body

?body: expr | conditional
conditional: "if" "(" expr ")" expr
loop_variables: NAME | "(" NAME "," NAME ")"

?expr: ternary
?ternary: or_expr | or_expr "?" expr ":" expr
?or_expr: and_expr | or_expr "||" and_expr
?and_expr: equality | and_expr "&&" equality
?equality: additive | equality EQUALITY_OP additive
?additive: multiplicative | additive ADDITIVE_OP multiplicative
?multiplicative: unary | multiplicative MULTIPLICATIVE_OP unary
?unary: postfix | "!" unary -> not_
?postfix: primary
    | postfix "." NAME -> member
    | postfix ".?" NAME -> safe_member
    | postfix "[" expr "]" -> index
?primary: STRING -> string
    | INT -> integer
    | "true" -> true
    | "false" -> false
    | "null" -> null
    | NAME -> name
    | NAME "(" _NL? (expr (_argsep expr)*)? _NL? ")" -> call
    | "{" _NL? (property (_itemsep property)*)? _NL? "}" -> object
    | "[" _NL? (expr (_itemsep expr)*)? _NL? "]" -> array
    | "(" expr ")"
    | loop
loop: "[" _NL? "for" loop_variables "in" expr ":" (expr | conditional) _NL? "]"
property: (NAME | STRING) ":" expr

_argsep: "," _NL?
_itemsep: _NL | "," _NL?

EXISTING: "existing"
EQUALITY_OP: "==" | "!="
ADDITIVE_OP: "+" | "-"
MULTIPLICATIVE_OP: "*" | "/" | "%"
NAME: /[A-Za-z_][A-Za-z0-9_]*/
STRING: /'(\\.|[^'\\])*'/
INT: /[0-9]+/
_NL: /((\/\/[^\n]*)?\r?\n[\t ]*)+/
%ignore /[\t ]+/
"""

_PARSER = Lark(GRAMMAR, parser="lalr", maybe_placeholders=False)
_EXPRESSION_PARSER = Lark(GRAMMAR, parser="lalr", start="expr", maybe_placeholders=False)
_ESCAPES = {"\\": "\\", "'": "'", "n": "\n", "r": "\r", "t": "\t", "$": "$"}
BICEP_ONLY_KEYS = frozenset({"parent", "dependsOn", "scope"})
"""Keys of a resource declaration that Bicep consumes itself; ARM never sees them in the body."""


class BicepEvalError(Exception):
    """The template uses something this evaluator does not interpret."""


@dataclasses.dataclass(frozen=True)
class Unknown:
    """A value known only at deployment (a resource id, ``uniqueString(...)``, the tenant).

    ``non_empty``: a string known not to be empty (an interpolation with literal text, e.g.
    ``'kv-${uniqueString(...)}'``), so that ``empty()`` of it is known to be false."""

    what: str
    non_empty: bool = False


@dataclasses.dataclass(frozen=True)
class Resource:
    """One resource of the deployment as ARM receives it."""

    file: str
    symbol: str
    type: str
    api_version: str
    name: str | Unknown
    body: dict[str, Any]
    existing: bool

    @property
    def type_reference(self) -> str:
        return f"{self.type}@{self.api_version}"

    @property
    def path(self) -> str | Unknown:
        """The resource's id below ``/providers/``: ``Microsoft.X/a/n1/b/n2``, or below its
        scope's for an extension resource (``.../providers/Microsoft.Insights/...``)."""
        scope = self.body.get("scope")
        if isinstance(self.name, Unknown):
            if not isinstance(scope, ResourceRef) or "/" in self.type.split("/", 1)[1]:
                return self.name
            # An extension resource named by guid(): known by its scope and type.
            own = _resource_path(self.type, "<guid>")
        else:
            own = _resource_path(self.type, *self.name.split("/"))
        if isinstance(scope, ResourceRef):
            if isinstance(scope.name, Unknown):
                return scope.name
            return f"{_resource_path(scope.type, *scope.name.split('/'))}/providers/{own}"
        return own


@dataclasses.dataclass
class ResourceRef:
    """A resource symbol used in an expression: its name is known, the rest is not."""

    symbol: str
    name: str | Unknown
    type: str

    def member(self, key: str) -> Any:
        return self.name if key == "name" else Unknown(f"{self.symbol}.{key}")


@dataclasses.dataclass
class _ModuleRef:
    symbol: str
    outputs: dict[str, Any]

    def member(self, key: str) -> Any:
        if key == "outputs":
            return self.outputs
        if key == "name":
            return Unknown(f"{self.symbol}.name")
        raise BicepEvalError(f"module {self.symbol} has no member {key}")


def _unknown_in(values: Any) -> Unknown | None:
    for value in values:
        if isinstance(value, Unknown):
            return value
    return None


def _to_string(value: Any) -> str | Unknown:
    """``string(value)`` and interpolation: strings as they are, everything else as JSON."""
    if isinstance(value, Unknown):
        return value
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if _contains_unknown(value):
        return Unknown("string of a value with unknown parts")
    return json.dumps(value, separators=(",", ":"))


def _contains_unknown(value: Any) -> bool:
    if isinstance(value, Unknown):
        return True
    if isinstance(value, dict):
        return any(_contains_unknown(v) for v in value.values())
    if isinstance(value, list):
        return any(_contains_unknown(v) for v in value)
    return False


def _contains(container: Any, item: Any) -> Any:
    if isinstance(container, dict):
        return item in container
    if isinstance(container, list | str):
        return item in container
    raise BicepEvalError(f"contains() on {type(container).__name__}")


def _empty(value: Any) -> Any:
    if isinstance(value, Unknown):
        return False if value.non_empty else value
    if value is None:
        return True
    if isinstance(value, str | list | dict):
        return len(value) == 0
    raise BicepEvalError(f"empty() on {type(value).__name__}")


def _union(*values: Any) -> Any:
    """Bicep's ``union``: objects merged key by key, nested objects recursively (the later value
    wins otherwise); arrays concatenated without repeats."""
    if all(isinstance(v, dict) for v in values):
        merged: dict[str, Any] = {}
        for value in values:
            for key, item in value.items():
                both_objects = isinstance(merged.get(key), dict) and isinstance(item, dict)
                merged[key] = _union(merged[key], item) if both_objects else item
        return merged
    if all(isinstance(v, list) for v in values):
        merged_items: list[Any] = []
        for item in (i for value in values for i in value):
            if item not in merged_items:
                merged_items.append(item)
        return merged_items
    raise BicepEvalError("union() of mixed types")


def _concat(*values: Any) -> Any:
    if all(isinstance(v, list) for v in values):
        return [item for value in values for item in value]
    parts = [_to_string(v) for v in values]
    return _unknown_in(parts) or "".join(str(p) for p in parts)


def _take(value: Any, count: Any) -> Any:
    if isinstance(value, Unknown):
        return Unknown(f"take({value.what})", non_empty=value.non_empty and count > 0)
    if isinstance(value, str | list):
        return value[:count]
    raise BicepEvalError(f"take() on {type(value).__name__}")


def _replace(text: Any, old: Any, new: Any) -> Any:
    return text.replace(old, new)


def _json(text: Any) -> Any:
    return json.loads(text)


SUBSCRIPTION_ID = "{subscriptionId}"
RESOURCE_GROUP = "{resourceGroup}"
"""Placeholders for the deployment's subscription and resource group in the resource ids that
``subscriptionResourceId`` and ``resourceId`` build: the rest of such an id is known."""


def _resource_path(resource_type: str, *names: str) -> str:
    """``('Microsoft.X/a/b', 'n1', 'n2')`` -> ``'Microsoft.X/a/n1/b/n2'``."""
    namespace, *types = resource_type.split("/")
    if len(types) != len(names):
        raise BicepEvalError(f"{resource_type} takes {len(types)} names, got {len(names)}")
    return "/".join([namespace, *(f"{t}/{n}" for t, n in zip(types, names, strict=True))])


def _subscription_resource_id(resource_type: str, *names: str) -> str:
    return f"/subscriptions/{SUBSCRIPTION_ID}/providers/{_resource_path(resource_type, *names)}"


def _resource_id(resource_type: str, *names: str) -> str:
    path = _resource_path(resource_type, *names)
    return f"/subscriptions/{SUBSCRIPTION_ID}/resourceGroups/{RESOURCE_GROUP}/providers/{path}"


# Functions whose result depends only on their arguments: evaluated (an unknown argument makes the
# result unknown). The others describe the deployment's environment and are unknown here.
_PURE_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "contains": _contains,
    "empty": _empty,
    "union": _union,
    "concat": _concat,
    "take": _take,
    "replace": _replace,
    "json": _json,
    "string": _to_string,
    "length": len,
    "toLower": str.lower,
    "toUpper": str.upper,
    "subscriptionResourceId": _subscription_resource_id,
    "resourceId": _resource_id,
}
_ENVIRONMENT_FUNCTIONS = frozenset({"uniqueString", "guid", "tenantResourceId"})


@dataclasses.dataclass
class _Scope:
    """Names visible in one template: parameters, variables (evaluated on first use), resource
    and module symbols, and loop variables (innermost last)."""

    file: Path
    parameters: dict[str, Any]
    variables: dict[str, Tree[Token]]
    symbols: dict[str, Any] = dataclasses.field(default_factory=dict)
    values: dict[str, Any] = dataclasses.field(default_factory=dict)
    locals: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    evaluating: set[str] = dataclasses.field(default_factory=set)
    pending: dict[str, Callable[[], None]] = dataclasses.field(default_factory=dict)
    """Resource and module declarations not evaluated yet: Bicep's order of declarations does
    not matter, so a symbol is evaluated when first referred to."""


class _Evaluator:
    def __init__(self, scope: _Scope) -> None:
        self.scope = scope

    def lookup(self, name: str) -> Any:
        for frame in reversed(self.scope.locals):
            if name in frame:
                return frame[name]
        if name in self.scope.parameters:
            return self.scope.parameters[name]
        if name in self.scope.values:
            return self.scope.values[name]
        if name in self.scope.variables:
            if name in self.scope.evaluating:
                raise BicepEvalError(f"{self.scope.file.name}: variable {name} refers to itself")
            self.scope.evaluating.add(name)
            value = self.evaluate(self.scope.variables[name])
            self.scope.evaluating.discard(name)
            self.scope.values[name] = value
            return value
        if name in self.scope.pending:
            if name in self.scope.evaluating:
                raise BicepEvalError(f"{self.scope.file.name}: {name} depends on itself")
            self.scope.evaluating.add(name)
            self.scope.pending.pop(name)()
            self.scope.evaluating.discard(name)
        if name in self.scope.symbols:
            return self.scope.symbols[name]
        raise BicepEvalError(f"{self.scope.file.name}: unknown name {name}")

    def evaluate(self, node: Tree[Token] | Token) -> Any:
        if isinstance(node, Token):
            raise BicepEvalError(f"unexpected token {node!r}")
        handler = getattr(self, f"_{node.data}", None)
        if handler is None:
            raise BicepEvalError(f"{self.scope.file.name}: unsupported construct {node.data}")
        return handler(*node.children)

    def _string(self, token: Token) -> Any:
        return self.interpolate(str(token)[1:-1])

    def interpolate(self, raw: str) -> Any:
        parts: list[Any] = []
        text: list[str] = []
        index = 0
        while index < len(raw):
            char = raw[index]
            if char == "\\":
                text.append(_ESCAPES[raw[index + 1]])
                index += 2
            elif raw.startswith("${", index):
                depth, end = 1, index + 2
                while depth:
                    depth += {"{": 1, "}": -1}.get(raw[end], 0)
                    end += 1
                parts.append("".join(text))
                text = []
                parts.append(
                    _to_string(self.evaluate(_EXPRESSION_PARSER.parse(raw[index + 2 : end - 1])))
                )
                index = end
            else:
                text.append(char)
                index += 1
        parts.append("".join(text))
        if unknown := _unknown_in(parts):
            literal = any(isinstance(part, str) and part for part in parts)
            return Unknown(unknown.what, non_empty=literal or unknown.non_empty)
        return "".join(parts)

    def _integer(self, token: Token) -> int:
        return int(token)

    def _true(self) -> bool:
        return True

    def _false(self) -> bool:
        return False

    def _null(self) -> None:
        return None

    def _name(self, token: Token) -> Any:
        return self.lookup(str(token))

    def _member(self, target: Tree[Token], key: Token) -> Any:
        value = self.evaluate(target)
        return self.member(value, str(key), safe=False)

    def _safe_member(self, target: Tree[Token], key: Token) -> Any:
        value = self.evaluate(target)
        return self.member(value, str(key), safe=True)

    def member(self, value: Any, key: str, *, safe: bool) -> Any:
        if isinstance(value, Unknown):
            return Unknown(f"{value.what}.{key}")
        if isinstance(value, ResourceRef | _ModuleRef):
            return value.member(key)
        if value is None and safe:
            return None
        if isinstance(value, dict):
            if key in value:
                return value[key]
            if safe:
                return None
            raise BicepEvalError(f"{self.scope.file.name}: object has no property {key}")
        raise BicepEvalError(f"{self.scope.file.name}: .{key} on {type(value).__name__}")

    def _index(self, target: Tree[Token], key: Tree[Token]) -> Any:
        value, index = self.evaluate(target), self.evaluate(key)
        if isinstance(value, Unknown) or isinstance(index, Unknown):
            return Unknown("index")
        if isinstance(value, dict):
            if index not in value:
                raise BicepEvalError(f"{self.scope.file.name}: object has no property {index}")
            return value[index]
        return value[index]

    def _not_(self, operand: Tree[Token]) -> Any:
        value = self.evaluate(operand)
        return value if isinstance(value, Unknown) else not value

    def _equality(self, left: Tree[Token], operator: Token, right: Tree[Token]) -> Any:
        a, b = self.evaluate(left), self.evaluate(right)
        if unknown := _unknown_in((a, b)):
            return unknown
        return (a == b) if operator == "==" else (a != b)

    def _additive(self, left: Tree[Token], operator: Token, right: Tree[Token]) -> Any:
        a, b = self.evaluate(left), self.evaluate(right)
        if unknown := _unknown_in((a, b)):
            return unknown
        return a + b if operator == "+" else a - b

    def _multiplicative(self, left: Tree[Token], operator: Token, right: Tree[Token]) -> Any:
        a, b = self.evaluate(left), self.evaluate(right)
        if unknown := _unknown_in((a, b)):
            return unknown
        if operator == "*":
            return a * b
        return a // b if operator == "/" else a % b

    def _and_expr(self, left: Tree[Token], right: Tree[Token]) -> Any:
        a = self.condition(left)
        return a and self.condition(right)

    def _or_expr(self, left: Tree[Token], right: Tree[Token]) -> Any:
        a = self.condition(left)
        return a or self.condition(right)

    def condition(self, node: Tree[Token]) -> bool:
        value = self.evaluate(node)
        if isinstance(value, Unknown):
            raise BicepEvalError(
                f"{self.scope.file.name}: a condition depends on {value.what}, unknown before "
                "deployment"
            )
        if not isinstance(value, bool):
            raise BicepEvalError(f"{self.scope.file.name}: condition is not a bool: {value!r}")
        return value

    def _ternary(self, test: Tree[Token], if_true: Tree[Token], if_false: Tree[Token]) -> Any:
        return self.evaluate(if_true if self.condition(test) else if_false)

    def _call(self, function: Token, *arguments: Tree[Token]) -> Any:
        name = str(function)
        values = [self.evaluate(argument) for argument in arguments]
        if name in ("empty", "take"):
            return _PURE_FUNCTIONS[name](*values)
        if name in _PURE_FUNCTIONS:
            if unknown := _unknown_in(values):
                return Unknown(f"{name}({unknown.what})")
            return _PURE_FUNCTIONS[name](*values)
        if name in _ENVIRONMENT_FUNCTIONS:
            return Unknown(f"{name}(...)")
        if name == "resourceGroup":
            return {"id": Unknown("resourceGroup().id"), "name": Unknown("resourceGroup().name"),
                    "location": Unknown("resourceGroup().location")}  # fmt: skip
        if name == "subscription":
            return {"id": Unknown("subscription().id"),
                    "subscriptionId": Unknown("subscription().subscriptionId"),
                    "tenantId": Unknown("subscription().tenantId")}  # fmt: skip
        if name == "loadTextContent":
            return (self.scope.file.parent / values[0]).read_text(encoding="utf-8")
        raise BicepEvalError(f"{self.scope.file.name}: function {name}() is not interpreted")

    def _object(self, *properties: Tree[Token]) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for prop in properties:
            key_token, value_node = prop.children
            assert isinstance(key_token, Token)
            assert isinstance(value_node, Tree)
            key = (
                self.interpolate(str(key_token)[1:-1])
                if key_token.type == "STRING"
                else str(key_token)
            )
            if isinstance(key, Unknown):
                key = f"<{key.what}>"
            result[key] = self.evaluate(value_node)
        return result

    def _array(self, *items: Tree[Token]) -> list[Any]:
        return [self.evaluate(item) for item in items]

    def _loop(self, *children: Tree[Token]) -> list[Any]:
        loop: Tree[Token] = Tree("loop", list(children))
        return [self.evaluate(node) for node, _ in self.iterations(loop) if node is not None]

    def iterations(self, body: Tree[Token]) -> Iterator[tuple[Tree[Token] | None, dict[str, Any]]]:
        """The body expression of a declaration once per loop iteration and condition: (the
        object, or None where the ``if`` is false; the loop variables)."""
        if body.data == "loop":
            variables, array_node, inner = body.children
            assert isinstance(variables, Tree)
            assert isinstance(array_node, Tree)
            assert isinstance(inner, Tree)
            array = self.evaluate(array_node)
            if not isinstance(array, list):
                raise BicepEvalError(f"{self.scope.file.name}: loop over {array!r}")
            names = [str(token) for token in variables.children]
            for index, item in enumerate(array):
                frame = {names[0]: item, **({names[1]: index} if len(names) > 1 else {})}
                self.scope.locals.append(frame)
                try:
                    yield from ((node, frame) for node, _ in self._conditional(inner))
                finally:
                    self.scope.locals.pop()
        else:
            yield from self._conditional(body)

    def _conditional(
        self, node: Tree[Token]
    ) -> Iterator[tuple[Tree[Token] | None, dict[str, Any]]]:
        if node.data == "conditional":
            test, inner = node.children
            assert isinstance(test, Tree)
            assert isinstance(inner, Tree)
            yield (inner if self.condition(test) else None), {}
        else:
            yield node, {}


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


class Deployment:
    """Every resource of ``template`` and its modules for the given parameter values."""

    def __init__(self, template: Path, parameters: Mapping[str, Any]) -> None:
        self.resources: list[Resource] = []
        self.outputs = self._evaluate_file(template, dict(parameters))

    def _evaluate_file(self, path: Path, arguments: dict[str, Any]) -> dict[str, Any]:
        tree = _PARSER.parse(path.read_text(encoding="utf-8"))
        declarations = [d.children[-1] for d in tree.children if isinstance(d, Tree)]
        parameters: dict[str, Any] = {}
        variables: dict[str, Tree[Token]] = {}
        for node in declarations:
            assert isinstance(node, Tree)
            if node.data == "var":
                name, value = node.children
                assert isinstance(value, Tree)
                variables[str(name)] = value
        scope = _Scope(path, parameters, variables)
        evaluator = _Evaluator(scope)
        for node in declarations:
            assert isinstance(node, Tree)
            if node.data != "param":
                continue
            parameter = str(node.children[0])
            if parameter in arguments:
                parameters[parameter] = arguments.pop(parameter)
            elif len(node.children) == 3:
                default = node.children[2]
                assert isinstance(default, Tree)
                parameters[parameter] = evaluator.evaluate(default)
            else:
                raise BicepEvalError(f"{path.name}: parameter {parameter} has no value")
        if arguments:
            raise BicepEvalError(f"{path.name}: no parameters {sorted(arguments)}")
        for node in declarations:
            assert isinstance(node, Tree)
            if node.data in ("resource", "module"):
                declare = self._resource if node.data == "resource" else self._module
                scope.pending[str(node.children[0])] = functools.partial(declare, evaluator, node)
        while scope.pending:
            evaluator.lookup(next(iter(scope.pending)))
        outputs = {}
        for node in declarations:
            assert isinstance(node, Tree)
            if node.data == "output":
                name, _, body = node.children
                assert isinstance(body, Tree)
                if body.data == "loop":
                    outputs[str(name)] = [
                        evaluator.evaluate(inner)
                        for inner, _ in evaluator.iterations(body)
                        if inner is not None
                    ]
                else:
                    outputs[str(name)] = evaluator.evaluate(body)
        return outputs

    def _resource(self, evaluator: _Evaluator, node: Tree[Token]) -> None:
        symbol, type_token, *rest = node.children
        body = rest[-1]
        assert isinstance(body, Tree)
        existing = len(rest) == 2
        type_name, api_version = str(type_token)[1:-1].split("@")
        refs = []
        for inner, _ in evaluator.iterations(body):
            if inner is None:
                refs.append(
                    ResourceRef(str(symbol), Unknown(f"{symbol} (not deployed)"), type_name)
                )
                continue
            value = _without_nulls(evaluator.evaluate(inner))
            name = value["name"]
            parent = value.get("parent")
            if isinstance(parent, ResourceRef):
                if isinstance(parent.name, Unknown) or isinstance(name, Unknown):
                    name = Unknown(f"a child of {parent.symbol}")
                else:
                    name = f"{parent.name}/{name}"
            self.resources.append(
                Resource(evaluator.scope.file.name, str(symbol), type_name, api_version, name,
                         value, existing)
            )  # fmt: skip
            refs.append(ResourceRef(str(symbol), name, type_name))
        evaluator.scope.symbols[str(symbol)] = refs if body.data == "loop" else refs[0]

    def _module(self, evaluator: _Evaluator, node: Tree[Token]) -> None:
        symbol, path_token, body = node.children
        assert isinstance(body, Tree)
        path = evaluator.scope.file.parent / str(path_token)[1:-1]
        refs = []
        for inner, _ in evaluator.iterations(body):
            if inner is None:
                refs.append(_ModuleRef(str(symbol), {}))
                continue
            value = evaluator.evaluate(inner)
            outputs = self._evaluate_file(path, dict(value.get("params", {})))
            refs.append(_ModuleRef(str(symbol), outputs))
        evaluator.scope.symbols[str(symbol)] = refs if body.data == "loop" else refs[0]

    def of_type(self, type_name: str) -> list[Resource]:
        return [r for r in self.resources if r.type == type_name and not r.existing]


def parameter_values(document: Mapping[str, Any]) -> dict[str, Any]:
    """The values of a parameters document: ``{"parameters": {"x": {"value": ...}}}``."""
    return {name: entry["value"] for name, entry in document["parameters"].items()}


__all__ = [
    "BICEP_ONLY_KEYS",
    "RESOURCE_GROUP",
    "SUBSCRIPTION_ID",
    "BicepEvalError",
    "Deployment",
    "Resource",
    "ResourceRef",
    "Unknown",
    "parameter_values",
]

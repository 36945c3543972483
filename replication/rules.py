"""Service Bus subscription rules as values: what the topology declares and patterns prescribe.

A leaf module (it depends only on the SQL grammar in :mod:`replication.sql`, imported when a
text is first checked): the topology schema, the patterns and the linter all use these records,
so none of them needs another. A topology whose only rules are the library's own (the patterns
build them ready-made, see ``patterns/all_active.py``) is loaded without the SQL parser, which
the local host then never needs (issue 37: its start-up).

- :class:`RuleSpec`: a subscription rule (a SQL or correlation filter and an optional SQL
  action), validated when it is built: an expression Service Bus would reject fails with the
  rule's name.
- :class:`SqlText`: one SQL expression found somewhere (a topology file, a pattern option, a
  Bicep file), with where it was found and whether it is a filter or an action, for
  ``python -m replication lint-rules``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

if TYPE_CHECKING:
    from replication.sql import SqlSyntaxError

DEFAULT_RULE_NAME = "$Default"
"""The rule Service Bus adds to every new subscription; a rule of this name replaces it."""


class SpecModel(BaseModel):
    """Base of the topology file's records: camelCase keys, unknown keys rejected, immutable."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
        str_strip_whitespace=True,
    )


def _string_property_value(value: object) -> object:
    """Refuse a correlation property value that is not a string, with the reason.

    ARM's ``CorrelationFilter.properties`` is a string-to-string map (the Bicep path and the az
    CLI's ``--correlation-filter-property key=value`` alike), so a filter provisioned here can
    only hold strings. Service Bus compares a property with the filter's value by type: a filter
    value of ``"2"`` does not match a message whose property is the integer 2
    (Azure/azure-service-bus issue 401: a correlation filter made in the portal matched only once
    the message carried the value as a string). Converting ``2`` to ``"2"`` would therefore make
    the deployed rule silently miss the messages the topology means, so it is refused instead.
    """
    if isinstance(value, str):
        return value
    kind = "a boolean" if isinstance(value, bool) else "a number"
    if not isinstance(value, int | float):
        kind = f"a {type(value).__name__}"
    raise ValueError(
        f"{json.dumps(value)} is {kind}, not a string: correlation filter properties are "
        "provisioned as strings (ARM and the az CLI hold string values only), and Service Bus "
        "matches a string value only against a string property. Write the value in quotes and "
        'send the message property as a string, or use a SQL filter (e.g. "tier = 2") to '
        "match a number or bool"
    )


CorrelationPropertyValue = Annotated[str, BeforeValidator(_string_property_value)]
"""A correlation filter property value: a string (see :func:`_string_property_value`)."""


class CorrelationFilterSpec(SpecModel):
    """A Service Bus correlation filter: every given field must match exactly.

    Property values are strings only, and Service Bus matches a string only against a string
    property: send numbers and booleans as strings, or match them with a SQL filter.
    """

    # Why numbers and bools are refused rather than converted: _string_property_value.

    correlation_id: str | None = None
    message_id: str | None = None
    to: str | None = None
    reply_to: str | None = None
    subject: str | None = None
    session_id: str | None = None
    reply_to_session_id: str | None = None
    content_type: str | None = None
    properties: dict[str, CorrelationPropertyValue] = Field(default_factory=dict)
    """application properties that must match; values are strings only"""


class RuleFilterSpec(SpecModel):
    """Exactly one of a SQL filter expression or a correlation filter."""

    sql: str | None = None
    """a SQL filter expression (Service Bus's rule language)"""
    correlation: CorrelationFilterSpec | None = None
    """a correlation filter: every field given must match exactly"""

    @model_validator(mode="after")
    def _exactly_one(self) -> RuleFilterSpec:
        if (self.sql is None) == (self.correlation is None):
            raise ValueError("give exactly one of 'sql' or 'correlation'")
        return self


class RuleSpec(SpecModel):
    """A subscription rule: a filter and an optional SQL action."""

    name: Annotated[str, Field(min_length=1, max_length=50)]
    """the rule's name (`$Default` replaces the rule Service Bus adds to every subscription)"""
    filter: RuleFilterSpec
    """which messages the subscription takes"""
    action: str | None = None
    """a SQL rule action run on each message the filter takes (`SET replication = 1`)"""

    @model_validator(mode="after")
    def _parses(self) -> RuleSpec:
        for text in rule_texts(self, "filter", "action"):
            if (error := text.problem()) is not None:
                raise ValueError(f"rule {self.name}: {text.where}: {error}")
        return self


@dataclasses.dataclass(frozen=True, slots=True)
class SqlText:
    """A SQL expression, where it was found, and whether it is a filter or an action."""

    where: str
    rule_name: str
    kind: Literal["filter", "action"]
    expression: str
    on: str = ""
    """The subscription the rule is on (``weu/orders/Subscriptions/replication``); empty for a
    pattern's condition, which is on no subscription, and where the caller does not know."""

    def problem(self) -> SqlSyntaxError | None:
        """Why Service Bus would reject the expression, or None when it would accept it."""
        from replication.sql import SqlFilter, SqlRuleAction, SqlSyntaxError

        try:
            (SqlFilter if self.kind == "filter" else SqlRuleAction)(self.expression)
        except SqlSyntaxError as error:
            return error
        return None

    def located(self, prefix: str) -> SqlText:
        """The same text with ``prefix`` (a file name) in front of its location."""
        return dataclasses.replace(self, where=f"{prefix}: {self.where}")


def rule_texts(
    rule: RuleSpec, filter_where: str, action_where: str, on: str = ""
) -> Iterator[SqlText]:
    """The SQL filter and action of ``rule``, located at the given places, on subscription
    ``on``."""
    if rule.filter.sql is not None:
        yield SqlText(filter_where, rule.name, "filter", rule.filter.sql, on)
    if rule.action is not None:
        yield SqlText(action_where, rule.name, "action", rule.action, on)


__all__ = [
    "DEFAULT_RULE_NAME",
    "CorrelationFilterSpec",
    "RuleFilterSpec",
    "RuleSpec",
    "SpecModel",
    "SqlText",
    "rule_texts",
]

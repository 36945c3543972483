"""Service Bus subscription rules as values: what the topology declares and patterns prescribe.

A leaf module (it depends only on the SQL grammar in :mod:`replication.sql`): the topology
schema, the patterns and the linter all use these records, so none of them needs another.

- :class:`RuleSpec`: a subscription rule (a SQL or correlation filter and an optional SQL
  action), validated when it is built: an expression Service Bus would reject fails with the
  rule's name.
- :class:`SqlText`: one SQL expression found somewhere (a topology file, a pattern option, a
  Bicep file), with where it was found and whether it is a filter or an action, for
  ``python -m replication lint-rules``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from replication.sql import SqlFilter, SqlRuleAction, SqlSyntaxError

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


class CorrelationFilterSpec(SpecModel):
    """A Service Bus correlation filter: every given field must match exactly."""

    correlation_id: str | None = None
    message_id: str | None = None
    to: str | None = None
    reply_to: str | None = None
    subject: str | None = None
    session_id: str | None = None
    reply_to_session_id: str | None = None
    content_type: str | None = None
    properties: dict[str, str | int | float | bool] = Field(default_factory=dict)


class RuleFilterSpec(SpecModel):
    """Exactly one of a SQL filter expression or a correlation filter."""

    sql: str | None = None
    correlation: CorrelationFilterSpec | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> RuleFilterSpec:
        if (self.sql is None) == (self.correlation is None):
            raise ValueError("give exactly one of 'sql' or 'correlation'")
        return self


class RuleSpec(SpecModel):
    """A subscription rule: a filter and an optional SQL action."""

    name: Annotated[str, Field(min_length=1, max_length=50)]
    filter: RuleFilterSpec
    action: str | None = None

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

    def problem(self) -> SqlSyntaxError | None:
        """Why Service Bus would reject the expression, or None when it would accept it."""
        try:
            (SqlFilter if self.kind == "filter" else SqlRuleAction)(self.expression)
        except SqlSyntaxError as error:
            return error
        return None

    def located(self, prefix: str) -> SqlText:
        """The same text with ``prefix`` (a file name) in front of its location."""
        return dataclasses.replace(self, where=f"{prefix}: {self.where}")


def rule_texts(rule: RuleSpec, filter_where: str, action_where: str) -> Iterator[SqlText]:
    """The SQL filter and action of ``rule``, located at the given places."""
    if rule.filter.sql is not None:
        yield SqlText(filter_where, rule.name, "filter", rule.filter.sql)
    if rule.action is not None:
        yield SqlText(action_where, rule.name, "action", rule.action)


__all__ = [
    "DEFAULT_RULE_NAME",
    "CorrelationFilterSpec",
    "RuleFilterSpec",
    "RuleSpec",
    "SpecModel",
    "SqlText",
    "rule_texts",
]

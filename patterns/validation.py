"""Validation, reduction and enrichment on the way between two entities.

- ``condition``: a Service Bus SQL filter (the rule language subscribers already know); a
  message for which it is not true is not replicated but dead-lettered with reason
  ``ValidationFailed`` (``onInvalid: "skip"`` drops it with a logged reason instead).
- ``maxBodyBytes``: larger bodies are treated as invalid.
- ``requiredProperties``: application properties that must be present.
- ``removeProperties`` (reduce) and ``setProperties`` (enrich) shape the replica; they may not
  name a replication property (``repl-*``, ``replication``), which loop prevention needs.

The condition is compiled once, when the topology is loaded, so a syntax error fails start-up
with the JSON path of the option.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import Field, PrivateAttr, field_validator

from replication.envelope import Envelope
from replication.planning import (
    DeadLetter,
    Decision,
    Pattern,
    PatternOptions,
    Skip,
    TaskContext,
)
from replication.sql import SqlFilter

from ._forwarding import forward_to_targets
from ._property_edits import EditableName

VALIDATION_FAILED = "ValidationFailed"


class ValidationOptions(PatternOptions):
    """See the module docstring for the meaning of each option."""

    condition: str | None = None
    max_body_bytes: int | None = Field(default=None, gt=0)
    required_properties: list[str] = Field(default_factory=list)
    remove_properties: list[EditableName] = Field(default_factory=list)
    set_properties: dict[EditableName, str | int | float | bool] = Field(default_factory=dict)
    on_invalid: Literal["deadletter", "skip"] = "deadletter"
    _compiled: SqlFilter | None = PrivateAttr(default=None)

    @field_validator("condition")
    @classmethod
    def _parses(cls, value: str | None) -> str | None:
        if value is not None:
            SqlFilter(value)
        return value

    def model_post_init(self, context: object) -> None:
        if self.condition is not None:
            self._compiled = SqlFilter(self.condition)

    def problem(self, envelope: Envelope) -> str | None:
        """Why ``envelope`` is invalid, or None when it is valid."""
        if self.max_body_bytes is not None and len(envelope.body) > self.max_body_bytes:
            return f"body of {len(envelope.body)} bytes exceeds maxBodyBytes {self.max_body_bytes}"
        missing = [p for p in self.required_properties if p not in envelope.application_properties]
        if missing:
            return f"missing required properties: {', '.join(missing)}"
        if self._compiled is not None and not self._compiled.matches(envelope):
            return f"condition is not true: {self.condition}"
        return None


def plan(
    batch: Sequence[Envelope], context: TaskContext, options: ValidationOptions
) -> list[Decision]:
    decisions: list[Decision] = []
    for envelope in batch:
        problem = options.problem(envelope)
        if problem is not None:
            if options.on_invalid == "skip":
                decisions.append(Skip(envelope, f"{VALIDATION_FAILED}: {problem}"))
            else:
                decisions.append(DeadLetter(envelope, VALIDATION_FAILED, problem))
            continue
        replica = envelope
        if options.remove_properties or options.set_properties:
            replica = envelope.with_properties(
                options.set_properties, remove=tuple(options.remove_properties)
            )
        decisions.extend(forward_to_targets(envelope, context, replica=replica))
    return decisions


def sql_conditions(options: ValidationOptions) -> list[tuple[str, str]]:
    """(option path, expression) pairs for ``lint-rules``."""
    return [] if options.condition is None else [("condition", options.condition)]


PATTERN: Pattern[ValidationOptions] = Pattern(
    name="validation",
    summary="replicate only valid messages, reduced and enriched; dead-letter the rest",
    options_model=ValidationOptions,
    plan=plan,
    sql_conditions=sql_conditions,
)

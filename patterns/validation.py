"""Validation, reduction and enrichment on the way between two entities.

- ``condition``: a Service Bus SQL filter (the rule language subscribers already know); a
  message for which it is not true is not replicated but dead-lettered with reason
  ``ValidationFailed`` (``onInvalid: "skip"`` drops it with a logged reason instead).
- ``maxBodyBytes``: larger bodies are treated as invalid.
- ``requiredProperties``: application properties that must be present.
- ``bodySchema``: a JSON Schema (draft 4, 6 or 7, written inline) the body, read as JSON, must
  match; compiled to Python once, when the topology loads (fastjsonschema).
- ``bodyModel``: ``"package.module:Model"``, a pydantic model the body must validate against
  (``Model.model_validate_json``); imported once, when the topology loads (not when it loads
  with ``user_code=False``, for tools that never run a task: the validation context says so).
- ``removeProperties`` (reduce) and ``setProperties`` (enrich) shape the replica; they may not
  name a replication property (``repl-*``, ``replication``), which loop prevention needs.

The condition, the schema and the model are compiled or imported once, when the topology is
loaded, so a syntax error, an invalid schema or a model that does not import fails start-up with
the JSON path of the option. A task's user transform (``replication.transforms``) runs before
these checks: they judge the replica that would be sent.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, Literal

import fastjsonschema
from pydantic import (
    BaseModel,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
)

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
from replication.transforms import import_reference

from ._forwarding import forward_to_targets
from ._property_edits import EditableName

VALIDATION_FAILED = "ValidationFailed"


class ValidationOptions(PatternOptions):
    """The checks a message must pass to be replicated, and the properties its replica loses
    or gets. A message that fails a check is parked as ``ValidationFailed``, or skipped with
    ``onInvalid: "skip"``. A task's transform runs first: the checks judge the replica it
    returns. ``replication validate``, ``replication run`` and the Function app refuse a
    condition that does not parse, an invalid ``bodySchema`` or a ``bodyModel`` that does not
    import, naming the option's JSON path."""

    # The schema and the reference page publish the docstring above; the module docstring
    # says how each option is compiled or imported.

    condition: str | None = None
    """a Service Bus SQL filter a message must meet"""
    max_body_bytes: int | None = Field(default=None, gt=0)
    """larger bodies are invalid"""
    required_properties: list[str] = Field(default_factory=list)
    """application properties a message must carry"""
    remove_properties: list[EditableName] = Field(default_factory=list)
    """application properties the replica goes without (reduce)"""
    set_properties: dict[EditableName, str | int | float | bool] = Field(default_factory=dict)
    """application properties the replica gets (enrich)"""
    on_invalid: Literal["deadletter", "skip"] = "deadletter"
    """park an invalid message as `ValidationFailed`, or skip it with a logged reason"""
    body_schema: dict[str, Any] | None = None
    """a JSON Schema (draft 4, 6 or 7) the body must match"""
    body_model: str | None = None
    """`package.module:Model`, a pydantic model the body must validate against"""
    _compiled: SqlFilter | None = PrivateAttr(default=None)
    _schema: Callable[[Any], Any] | None = PrivateAttr(default=None)
    _model: type[BaseModel] | None = PrivateAttr(default=None)

    @field_validator("condition")
    @classmethod
    def _parses(cls, value: str | None) -> str | None:
        if value is not None:
            SqlFilter(value)
        return value

    @field_validator("body_schema")
    @classmethod
    def _compiles(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None:
            _compile_schema(value)
        return value

    @field_validator("body_model")
    @classmethod
    def _imports(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None and _user_code(info.context):
            _import_model(value)
        return value

    def model_post_init(self, context: object) -> None:
        if self.condition is not None:
            self._compiled = SqlFilter(self.condition)
        if self.body_schema is not None:
            self._schema = _compile_schema(self.body_schema)
        if self.body_model is not None and _user_code(context):
            self._model = _import_model(self.body_model)

    def problem(self, envelope: Envelope) -> str | None:
        """Why ``envelope`` is invalid, or None when it is valid."""
        if self.max_body_bytes is not None and len(envelope.body) > self.max_body_bytes:
            return f"body of {len(envelope.body)} bytes exceeds maxBodyBytes {self.max_body_bytes}"
        missing = [p for p in self.required_properties if p not in envelope.application_properties]
        if missing:
            return f"missing required properties: {', '.join(missing)}"
        if self._compiled is not None and not self._compiled.matches(envelope):
            return f"condition is not true: {self.condition}"
        if self._schema is not None:
            try:
                self._schema(json.loads(envelope.body))
            except ValueError as error:  # JSONDecodeError and JsonSchemaValueException
                return f"body does not match bodySchema: {_first_line(error)}"
        if self._model is not None:
            try:
                self._model.model_validate_json(envelope.body)
            except ValidationError as error:
                item = error.errors(include_url=False)[0]
                where = ".".join(str(part) for part in item["loc"]) or "body"
                return f"body does not match bodyModel {self.body_model}: {where}: {item['msg']}"
        return None


def _user_code(context: object) -> bool:
    """Whether the validation context lets options import the app's code (``bodyModel``):
    the topology loads with ``user_code=False`` for tools that never run a task."""
    return not (isinstance(context, dict) and context.get("user_code") is False)


def _compile_schema(schema: dict[str, Any]) -> Callable[[Any], Any]:
    try:
        validate: Callable[[Any], Any] = fastjsonschema.compile(schema)
    except fastjsonschema.JsonSchemaDefinitionException as error:
        raise ValueError(f"not a valid JSON Schema: {error}") from None
    return validate


def _import_model(reference: str) -> type[BaseModel]:
    model = import_reference(reference)
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise ValueError(f"'{reference}' is {model!r}, not a pydantic model (a BaseModel subclass)")
    return model


def _first_line(error: Exception) -> str:
    text = str(error).strip().splitlines()
    return text[0][:500] if text else type(error).__name__


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

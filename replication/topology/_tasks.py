"""Replication tasks: what the file says (:class:`TaskSpec`) and what runs (:class:`ResolvedTask`).

A task names its pattern and gives the pattern's ``options`` as a plain JSON object. When the
topology is loaded, each task is resolved once: the pattern is looked up in the registry and the
options are validated into the pattern's typed options model (compiling any SQL condition in
them), so that the runtime, the renderers and the linter all use the same typed object and
nothing re-validates or re-compiles it.

A task's optional ``transform`` names user code that runs on every message before the pattern
plans it (:mod:`replication.transforms`): ``"package.module:function"``, or the name of a
function registered in code (a :class:`~replication.transforms.Transforms` passed to
``load_topology``), either alone or as ``{"function": ..., "timeout": "PT10S"}``. It is imported
and its signature checked once, at load.
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field, field_validator

from replication.planning import (
    PATTERN_NAMES,
    Pattern,
    PatternOptions,
    Target,
    TaskContext,
    load_pattern,
)
from replication.rules import RuleSpec, SpecModel
from replication.transforms import DEFAULT_TIMEOUT

if TYPE_CHECKING:
    from replication.transforms import Transform, Transforms

from ._specs import EntityRef, PositiveDuration


class RetrySpec(SpecModel):
    """How a task rides out an outage of a target.

    One invocation retries a send that fails transiently, first after ``minBackoff``, the wait
    doubling up to ``maxBackoff``, for at most 80 % of the source's lock duration (never more
    than 4 minutes; 4 minutes for an event hub source). Then the invocation fails and the batch
    is delivered again (from a Service Bus source, at the cost of one delivery).
    ``outageTolerance`` is how long a target may stay down before a Service Bus source's
    ``maxDeliveryCount`` would move the waiting messages into its dead-letter queue: the queues
    and subscriptions the tasks read get enough deliveries for it, unless the file sets their
    ``maxDeliveryCount`` (one too low is an error).
    """

    # The schema and the reference page publish the docstring above. For developers: the
    # retry time is replication.topology.attempt_budget, the delivery count
    # required_delivery_count (both in ._outage, which docs/explanation/outages.md explains).

    min_backoff: PositiveDuration = timedelta(seconds=1)
    """the first wait before a failed send is retried"""
    max_backoff: PositiveDuration = timedelta(seconds=30)
    """the longest wait between retries (the wait doubles up to it)"""
    outage_tolerance: PositiveDuration = timedelta(hours=1)
    """how long a target may be down before the source dead-letters its messages; sizes the
    source's `maxDeliveryCount`"""


class TransformSpec(SpecModel):
    """A task's transform: ``function`` (``package.module:function`` or a registered name) and
    ``timeout``, how long one call may take before its message is parked as
    ``TransformFailed``. The file may give the function alone, as a string."""

    function: Annotated[str, Field(min_length=1)]
    """`package.module:function`, or a name registered in code"""
    timeout: PositiveDuration = timedelta(seconds=DEFAULT_TIMEOUT)
    """how long one call may take before its message is parked as `TransformFailed`"""


class TaskSpec(SpecModel):
    """One replication task: one source, one or more targets, a pattern and its options.

    ``deadLetterTarget`` is where messages that cannot be replicated are parked, one by one
    (with the properties ``DeadLetterReason`` and ``DeadLetterErrorDescription``), so that a
    poison message never fails the rest of its batch. A task whose source is an event hub must
    name one: an event hub has no dead-letter queue. A task whose source is a Service Bus
    entity and that names none parks in the queue ``replication-parked`` of its source
    namespace, which is created with the topology's other entities.
    """

    # The schema and the reference page publish the docstring above. For developers: the
    # loader fills the default in (PARKING_QUEUE, ._lanes), so spec.dead_letter_target of a
    # loaded task is never None, and materialize declares that queue.

    name: Annotated[str, Field(pattern=r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")]
    """the task's name: its Function's name and its log and metric label"""
    pattern: str
    """the federation pattern (its options go in `options`)"""
    source: EntityRef
    """what the task reads"""
    targets: Annotated[list[EntityRef], Field(min_length=1)]
    """where replicas go"""
    dead_letter_target: EntityRef | None = None
    """where messages that cannot be replicated are parked (Service Bus sources: default the
    queue `replication-parked` of the source namespace; event hub sources must name one)"""
    max_hops: Annotated[int, Field(ge=1)] | None = None
    """the most replications a message may go through (default: namespaces - 1)"""
    retry: RetrySpec = Field(default_factory=RetrySpec)
    """how sends to a target that is down are retried"""
    options: dict[str, Any] = Field(default_factory=dict)
    """the pattern's options (see each pattern's options below)"""
    transform: TransformSpec | None = None
    """your function run on every message before the pattern plans it"""

    @field_validator("transform", mode="before")
    @classmethod
    def _function_alone(cls, value: Any) -> Any:
        return {"function": value} if isinstance(value, str) else value

    @field_validator("pattern")
    @classmethod
    def _known_pattern(cls, value: str) -> str:
        if value not in PATTERN_NAMES:
            import difflib  # only for a wrong topology: a good one loads without importing it

            close = difflib.get_close_matches(value, PATTERN_NAMES, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise ValueError(
                f"unknown pattern '{value}'{hint}; known: {', '.join(sorted(PATTERN_NAMES))}"
            )
        return value


@dataclasses.dataclass(frozen=True, slots=True)
class ResolvedTask:
    """A task ready to run: its spec, its pattern, its typed options and the pattern's context.

    Build it with :func:`resolve_task`; a bad option raises pydantic's ``ValidationError``,
    which the loader reports with the file and JSON path. ``lane_of`` is set on the lanes a
    fan-out task is split into when it is loaded (see :mod:`._lanes`): the name of the task in
    the file, whose spec this lane's spec was derived from (one target, its own subscription
    or consumer group). ``transform`` is the task's user code, imported and checked (None: the
    pattern plans the received messages as they are).
    """

    spec: TaskSpec
    pattern: Pattern[Any]
    options: PatternOptions
    context: TaskContext
    lane_of: str | None = None
    transform: Transform | None = None
    user_code: bool = True
    """False: loaded for a tool that never runs a task (no transform, no ``bodyModel``
    imported); a runner refuses it."""

    @property
    def name(self) -> str:
        return self.spec.name

    def subscription_rule(self) -> RuleSpec | None:
        """The rule the pattern needs on the subscription the task reads, if it reads one."""
        if self.spec.source.subscription is None:
            return None
        return self.pattern.subscription_rule(self.options)


def resolve_task(
    spec: TaskSpec,
    *,
    max_hops: int,
    transforms: Transforms | None = None,
    user_code: bool = True,
) -> ResolvedTask:
    """Look up the task's pattern, validate its options into the pattern's model and load its
    transform (``transforms``: the functions registered in code; ``user_code=False``: import
    none of the app's code, neither the transform nor a ``bodyModel``, for tools that never run
    the task).

    Raises:
        pydantic.ValidationError: a bad option.
        replication.transforms.CodeReferenceError: the transform does not import or is not
            registered.
        replication.transforms.TransformSignatureError: it cannot take one message.
    """
    pattern = load_pattern(spec.pattern)
    # The context tells options that import the app's code (bodyModel) not to.
    options = pattern.options_model.model_validate(spec.options, context={"user_code": user_code})
    context = TaskContext(
        task_name=spec.name,
        source_namespace=spec.source.namespace,
        targets=tuple(Target(t.namespace, t.entity) for t in spec.targets),
        max_hops=max_hops,
    )
    transform = None
    if spec.transform is not None and user_code:
        # Imported here: a topology without transforms loads without them.
        from replication.transforms import Transform, resolve_function

        transform = Transform.of(
            resolve_function(spec.transform.function, transforms),
            name=spec.transform.function,
            timeout=spec.transform.timeout.total_seconds(),
        )
    return ResolvedTask(spec, pattern, options, context, transform=transform, user_code=user_code)


__all__ = ["ResolvedTask", "RetrySpec", "TaskSpec", "TransformSpec", "resolve_task"]

"""The topology file: namespaces, entities and replication tasks, validated with pydantic.

One JSON document (default ``topology.json``; the app setting ``REPLICATION_TOPOLOGY`` names
another path) is the single source of truth from which the Function triggers, the Bicep
parameters, the az CLI script and the emulator configuration are rendered, so they never disagree.
Keys are camelCase so that Bicep can read the same file with ``loadJsonContent``.

Every problem is reported as a :class:`~replication.exceptions.ConfigurationError` whose message
names the file, the JSON path and what is wrong, one line per problem, e.g.::

    examples/bad.json: tasks[0].targets[0].namespace: unknown namespace 'neu' (known: weu, eus)

Subscriptions that replication tasks read from are *managed*: :meth:`Topology.materialized`
adds them (and their loop-prevention rule, chosen by the task's pattern) to the entity lists,
and every renderer works from the materialized topology.
"""

from __future__ import annotations

import difflib
import enum
import json
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from replication.exceptions import ConfigurationError

TOPOLOGY_SETTING = "REPLICATION_TOPOLOGY"
DEFAULT_TOPOLOGY_PATH = "topology.json"
DEFAULT_RULE_NAME = "$Default"
DEFAULT_CONSUMER_GROUP = "$Default"

_LOGICAL_NAME = r"^[a-z][a-z0-9-]{0,48}[a-z0-9]$"
_ENTITY_NAME = r"^[A-Za-z0-9][A-Za-z0-9._\-/~]{0,259}$"
_SETTING_NAME = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
        str_strip_whitespace=True,
    )


class NamespaceKind(enum.StrEnum):
    """Which messaging service a namespace belongs to."""

    SERVICEBUS = "servicebus"
    EVENTHUBS = "eventhubs"


PositiveDuration = Annotated[timedelta, Field(gt=timedelta(0))]
EntityName = Annotated[str, Field(pattern=_ENTITY_NAME)]


class CorrelationFilterSpec(_Model):
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


class RuleFilterSpec(_Model):
    """Exactly one of a SQL filter expression or a correlation filter."""

    sql: str | None = None
    correlation: CorrelationFilterSpec | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> RuleFilterSpec:
        if (self.sql is None) == (self.correlation is None):
            raise ValueError("give exactly one of 'sql' or 'correlation'")
        return self


class RuleSpec(_Model):
    """A subscription rule: a filter and an optional SQL action."""

    name: Annotated[str, Field(min_length=1, max_length=50)]
    filter: RuleFilterSpec
    action: str | None = None

    @model_validator(mode="after")
    def _parses(self) -> RuleSpec:
        from replication.sql import SqlFilter, SqlRuleAction, SqlSyntaxError

        try:
            if self.filter.sql is not None:
                SqlFilter(self.filter.sql)
        except SqlSyntaxError as error:
            raise ValueError(f"rule {self.name}: filter: {error}") from None
        try:
            if self.action is not None:
                SqlRuleAction(self.action)
        except SqlSyntaxError as error:
            raise ValueError(f"rule {self.name}: action: {error}") from None
        return self


class _EntitySettings(_Model):
    max_delivery_count: Annotated[int, Field(ge=1, le=2000)] = 10
    lock_duration: Annotated[timedelta, Field(ge=timedelta(seconds=5), le=timedelta(minutes=5))] = (
        timedelta(minutes=1)
    )
    default_message_time_to_live: PositiveDuration | None = None
    dead_lettering_on_message_expiration: bool = False
    requires_session: bool = False
    forward_to: str | None = None
    forward_dead_lettered_messages_to: str | None = None


class QueueSpec(_EntitySettings):
    """A Service Bus queue."""

    name: EntityName
    requires_duplicate_detection: bool = False
    duplicate_detection_history_time_window: PositiveDuration = timedelta(minutes=10)


class SubscriptionSpec(_EntitySettings):
    """A topic subscription and its rules (``$Default`` with a TrueFilter when none is given)."""

    name: Annotated[str, Field(min_length=1, max_length=50)]
    rules: list[RuleSpec] = Field(default_factory=list)
    dead_lettering_on_filter_evaluation_exceptions: bool = True


class TopicSpec(_Model):
    """A Service Bus topic and its subscriptions."""

    name: EntityName
    requires_duplicate_detection: bool = False
    duplicate_detection_history_time_window: PositiveDuration = timedelta(minutes=10)
    default_message_time_to_live: PositiveDuration | None = None
    subscriptions: list[SubscriptionSpec] = Field(default_factory=list)


class EventHubSpec(_Model):
    """An event hub with its partitions and consumer groups (``$Default`` always exists)."""

    name: EntityName
    partition_count: Annotated[int, Field(ge=1, le=1024)] = 2
    message_retention_in_days: Annotated[int, Field(ge=1, le=90)] = 1
    consumer_groups: list[str] = Field(default_factory=list)


class NamespaceSpec(_Model):
    """One namespace in one region.

    ``name`` is the logical name written into ``repl-origin`` / ``repl-path``; ``connection`` is
    the app-setting prefix of its identity-based connection
    (``<connection>__fullyQualifiedNamespace``). For a namespace outside the Function app's
    tenant, where managed identity cannot be used, ``keyVaultSecret`` names the Key Vault secret
    holding its SAS connection string; the app setting ``<connection>`` then becomes a Key Vault
    reference and the connection-string path is used.
    """

    name: Annotated[str, Field(pattern=_LOGICAL_NAME)]
    region: Annotated[str, Field(min_length=1)]
    kind: NamespaceKind
    fully_qualified_namespace: Annotated[
        str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9.-]*[A-Za-z0-9](:\d+)?$")
    ]
    connection: Annotated[str, Field(pattern=_SETTING_NAME)]
    key_vault_secret: Annotated[str, Field(pattern=r"^[A-Za-z0-9-]{1,127}$")] | None = None
    sku: Literal["Basic", "Standard", "Premium"] = "Standard"
    queues: list[QueueSpec] = Field(default_factory=list)
    topics: list[TopicSpec] = Field(default_factory=list)
    event_hubs: list[EventHubSpec] = Field(default_factory=list)

    @model_validator(mode="after")
    def _entities_match_kind(self) -> NamespaceSpec:
        if self.kind is NamespaceKind.SERVICEBUS and self.event_hubs:
            raise ValueError("a servicebus namespace cannot declare eventHubs")
        if self.kind is NamespaceKind.EVENTHUBS and (self.queues or self.topics):
            raise ValueError("an eventhubs namespace cannot declare queues or topics")
        return self

    def entity_names(self) -> list[str]:
        """Queue, topic and event hub names, in declaration order."""
        names = [queue.name for queue in self.queues]
        names += [topic.name for topic in self.topics]
        names += [hub.name for hub in self.event_hubs]
        return names


class EntityRef(_Model):
    """A reference to an entity in a namespace, as a task's source or target.

    For a source, ``subscription`` names the topic subscription to read, ``consumerGroup`` the
    event hub consumer group, and ``deadLetterQueue`` reads the entity's dead-letter queue
    (spillover).
    """

    namespace: str
    entity: EntityName
    subscription: str | None = None
    consumer_group: str | None = None
    dead_letter_queue: bool = False

    def describe(self) -> str:
        path = f"{self.namespace}/{self.entity}"
        if self.subscription:
            path += f"/Subscriptions/{self.subscription}"
        if self.consumer_group:
            path += f"/ConsumerGroups/{self.consumer_group}"
        if self.dead_letter_queue:
            path += "/$DeadLetterQueue"
        return path


class TaskSpec(_Model):
    """One replication task: one source, one or more targets, a pattern and its options.

    ``deadLetterTarget`` is where messages that cannot be replicated are parked (with
    ``DeadLetterReason`` / ``DeadLetterErrorDescription`` properties). It is required for event
    hub sources, which have no dead-letter queue; for Service Bus sources without one, such a
    message fails its invocation until ``maxDeliveryCount`` moves it to the source's own DLQ.
    """

    name: Annotated[str, Field(pattern=r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")]
    pattern: str
    source: EntityRef
    targets: Annotated[list[EntityRef], Field(min_length=1)]
    dead_letter_target: EntityRef | None = None
    max_hops: Annotated[int, Field(ge=1)] | None = None
    options: dict[str, Any] = Field(default_factory=dict)

    @field_validator("pattern")
    @classmethod
    def _known_pattern(cls, value: str) -> str:
        from patterns import PATTERN_NAMES

        if value not in PATTERN_NAMES:
            close = difflib.get_close_matches(value, PATTERN_NAMES, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise ValueError(
                f"unknown pattern '{value}'{hint}; known: {', '.join(sorted(PATTERN_NAMES))}"
            )
        return value


class SqlRuleRef(_Model):
    """One SQL expression found in the topology, for ``python -m replication lint-rules``."""

    location: str
    rule_name: str
    kind: Literal["filter", "action"]
    expression: str


class Topology(_Model):
    """The validated topology document. Load it with :func:`load_topology`."""

    schema_: str | None = Field(default=None, alias="$schema")
    namespaces: Annotated[list[NamespaceSpec], Field(min_length=1)]
    tasks: list[TaskSpec] = Field(default_factory=list)

    def namespace(self, name: str) -> NamespaceSpec:
        """The namespace with logical name ``name`` (KeyError when absent)."""
        for namespace in self.namespaces:
            if namespace.name == name:
                return namespace
        raise KeyError(name)

    def task(self, name: str) -> TaskSpec:
        """The task named ``name`` (KeyError when absent)."""
        for task in self.tasks:
            if task.name == name:
                return task
        raise KeyError(name)

    def default_max_hops(self) -> int:
        """A message never needs more hops than there are other namespaces."""
        return max(1, len(self.namespaces) - 1)

    def max_hops(self, task: TaskSpec) -> int:
        """The task's hop limit, defaulting to :meth:`default_max_hops`."""
        return task.max_hops if task.max_hops is not None else self.default_max_hops()

    def pattern_options(self, task: TaskSpec) -> BaseModel:
        """The task's options, validated by its pattern's options model."""
        from patterns import load_pattern

        return load_pattern(task.pattern).options_model.model_validate(task.options)

    def materialized(self) -> Topology:
        """This topology plus every subscription, rule and consumer group its tasks need.

        A task reading a topic subscription gets that subscription created with the rule its
        pattern prescribes (all-active: ``replication IS NULL`` / ``SET replication = 1``),
        named ``$Default`` so that it replaces the TrueFilter rule Service Bus would otherwise add.
        A task reading an event hub consumer group gets the group created.
        """
        from patterns import load_pattern

        namespaces = {ns.name: ns.model_copy(deep=True) for ns in self.namespaces}
        for task in self.tasks:
            source = task.source
            namespace = namespaces[source.namespace]
            if source.subscription is not None:
                pattern = load_pattern(task.pattern)
                rule = pattern.subscription_rule(self.pattern_options(task))
                rules = [] if rule is None else [rule]
                topics = [
                    _with_subscription(topic, source.subscription, rules)
                    if topic.name == source.entity
                    else topic
                    for topic in namespace.topics
                ]
                namespace = namespace.model_copy(update={"topics": topics})
            if source.consumer_group and source.consumer_group != DEFAULT_CONSUMER_GROUP:
                hubs = [
                    hub.model_copy(
                        update={
                            "consumer_groups": _add_once(hub.consumer_groups, source.consumer_group)
                        }
                    )
                    if hub.name == source.entity
                    else hub
                    for hub in namespace.event_hubs
                ]
                namespace = namespace.model_copy(update={"event_hubs": hubs})
            namespaces[source.namespace] = namespace
        return self.model_copy(update={"namespaces": list(namespaces.values())})

    def sql_rules(self) -> Iterator[SqlRuleRef]:
        """Every SQL filter, action and pattern condition, located in the file.

        Rules written in the file carry their own JSON path; rules a task's pattern adds to the
        subscription it reads carry the task's path (``tasks[0].pattern``).
        """
        for n, namespace in enumerate(self.namespaces):
            for t, topic in enumerate(namespace.topics):
                for s, subscription in enumerate(topic.subscriptions):
                    for r, rule in enumerate(subscription.rules):
                        base = f"namespaces[{n}].topics[{t}].subscriptions[{s}].rules[{r}]"
                        yield from _rule_refs(rule, f"{base}.filter.sql", f"{base}.action")
        from patterns import load_pattern

        for i, task in enumerate(self.tasks):
            options = self.pattern_options(task)
            if task.source.subscription is not None:
                derived = load_pattern(task.pattern).subscription_rule(options)
                if derived is not None:
                    where = f"tasks[{i}].pattern"
                    yield from _rule_refs(derived, where, where)
            conditions = getattr(options, "sql_conditions", None)
            for relative, expression in conditions() if conditions is not None else ():
                yield SqlRuleRef(
                    location=f"tasks[{i}].options.{relative}",
                    rule_name=task.name,
                    kind="filter",
                    expression=expression,
                )


def _rule_refs(rule: RuleSpec, filter_location: str, action_location: str) -> Iterator[SqlRuleRef]:
    if rule.filter.sql is not None:
        yield SqlRuleRef(
            location=filter_location, rule_name=rule.name, kind="filter", expression=rule.filter.sql
        )
    if rule.action is not None:
        yield SqlRuleRef(
            location=action_location, rule_name=rule.name, kind="action", expression=rule.action
        )


def _add_once(items: Sequence[str], item: str) -> list[str]:
    return list(items) if item in items else [*items, item]


def _with_subscription(topic: TopicSpec, name: str, rules: list[RuleSpec]) -> TopicSpec:
    subscriptions = list(topic.subscriptions)
    for index, subscription in enumerate(subscriptions):
        if subscription.name == name:
            subscriptions[index] = subscription.model_copy(update={"rules": rules})
            break
    else:
        subscriptions.append(SubscriptionSpec(name=name, rules=rules))
    return topic.model_copy(update={"subscriptions": subscriptions})


# --------------------------------------------------------------------------- loading


def json_path(location: Sequence[str | int]) -> str:
    """Format a pydantic error location as a JSON path: ``tasks[0].source.namespace``."""
    text = ""
    for part in location:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text or "$"


def _format_validation_error(error: ValidationError, source: str) -> ConfigurationError:
    """One line per problem: ``FILE: JSON.PATH: message``; the first names ``location``.

    A misspelt key shows up twice in pydantic's report (an unknown key and a missing field);
    the two are merged into one "did you mean" line.
    """
    items = error.errors(include_url=False)
    missing = {
        (item["loc"][:-1], str(item["loc"][-1])) for item in items if item["type"] == "missing"
    }
    explained: set[tuple[Any, str]] = set()
    problems = []
    for item in items:
        message = item["msg"].removeprefix("Value error, ")
        if item["type"] == "extra_forbidden":
            parent, key = item["loc"][:-1], str(item["loc"][-1])
            candidates = [name for where, name in missing if where == parent]
            close = difflib.get_close_matches(key, candidates, n=1)
            if close:
                explained.add((parent, close[0]))
                message = f"unknown key (did you mean '{close[0]}'?)"
            else:
                message = "unknown key (check the spelling; keys are camelCase)"
        problems.append((item, json_path(item["loc"]), message))
    lines = [
        (where, message)
        for item, where, message in problems
        if not (item["type"] == "missing" and (item["loc"][:-1], str(item["loc"][-1])) in explained)
    ]
    (location, message), *others = lines
    text = "".join([message, *(f"\n{source}: {where}: {what}" for where, what in others)])
    return ConfigurationError(text, source=source, location=location)


def _check_references(topology: Topology, source: str) -> None:
    """Cross-reference checks pydantic cannot express field by field."""

    def fail(location: str, message: str) -> None:
        raise ConfigurationError(message, source=source, location=location)

    names = [ns.name for ns in topology.namespaces]
    _check_unique(names, "namespaces", "name", fail)
    _check_unique([ns.connection for ns in topology.namespaces], "namespaces", "connection", fail)
    for n, namespace in enumerate(topology.namespaces):
        _check_unique(namespace.entity_names(), f"namespaces[{n}]", "entity name", fail)
        for t, topic in enumerate(namespace.topics):
            where = f"namespaces[{n}].topics[{t}].subscriptions"
            _check_unique([s.name for s in topic.subscriptions], where, "name", fail)
            for s, subscription in enumerate(topic.subscriptions):
                rules = f"{where}[{s}].rules"
                _check_unique([r.name for r in subscription.rules], rules, "name", fail)
    _check_unique([task.name for task in topology.tasks], "tasks", "name", fail)
    for i, task in enumerate(topology.tasks):
        here = f"tasks[{i}]"
        _check_entity_ref(topology, task.source, f"{here}.source", fail, is_source=True)
        if task.dead_letter_target is not None:
            _check_entity_ref(
                topology, task.dead_letter_target, f"{here}.deadLetterTarget", fail, is_source=False
            )
        elif topology.namespace(task.source.namespace).kind is NamespaceKind.EVENTHUBS:
            fail(
                f"{here}.deadLetterTarget",
                "an event hub source has no dead-letter queue: name a deadLetterTarget entity "
                "where events that cannot be replicated are parked",
            )
        for j, target in enumerate(task.targets):
            _check_entity_ref(topology, target, f"{here}.targets[{j}]", fail, is_source=False)
            if (target.namespace, target.entity) == (task.source.namespace, task.source.entity):
                fail(f"{here}.targets[{j}]", "a task's target must differ from its source entity")
        try:
            topology.pattern_options(task)
        except ValidationError as error:
            item = error.errors(include_url=False)[0]
            location = json_path([f"{here}.options", *item["loc"]])
            message = item["msg"].removeprefix("Value error, ")
            if item["type"] == "extra_forbidden":
                message = f"unknown option for pattern '{task.pattern}'"
            fail(location, message)
        _check_route_targets(topology, task, here, fail)
        for subscription_task in topology.tasks[:i]:
            if task.source.subscription is not None and subscription_task.source == task.source:
                fail(
                    f"{here}.source",
                    f"task '{subscription_task.name}' already reads {task.source.describe()}: "
                    "two tasks on one subscription would split its messages between them",
                )
        _check_managed_subscription(topology, task, here, fail)


def _check_route_targets(topology: Topology, task: TaskSpec, here: str, fail: Any) -> None:
    options = topology.pattern_options(task)
    unknown_targets = getattr(options, "unknown_targets", None)
    if unknown_targets is None:
        return
    names = [f"{target.namespace}/{target.entity}" for target in task.targets]
    for name in unknown_targets(names):
        fail(
            f"{here}.options.routes",
            f"route target '{name}' is not a task target ({', '.join(names)})",
        )


def _check_unique(values: list[str], where: str, what: str, fail: Any) -> None:
    seen: set[str] = set()
    for index, value in enumerate(values):
        key = value.lower()
        if key in seen:
            fail(f"{where}[{index}]", f"duplicate {what} '{value}' (names are case-insensitive)")
        seen.add(key)


def _check_entity_ref(
    topology: Topology, ref: EntityRef, location: str, fail: Any, *, is_source: bool
) -> None:
    known = [ns.name for ns in topology.namespaces]
    if ref.namespace not in known:
        close = difflib.get_close_matches(ref.namespace, known, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        fail(
            f"{location}.namespace",
            f"unknown namespace '{ref.namespace}'{hint}; known: {', '.join(known)}",
        )
    namespace = topology.namespace(ref.namespace)
    entities = namespace.entity_names()
    if ref.entity not in entities:
        fail(
            f"{location}.entity",
            f"namespace '{namespace.name}' has no entity '{ref.entity}'; "
            f"declared: {', '.join(entities) or 'none'}",
        )
    is_topic = any(topic.name == ref.entity for topic in namespace.topics)
    is_hub = namespace.kind is NamespaceKind.EVENTHUBS
    if not is_source:
        for field_name in ("subscription", "consumer_group"):
            if getattr(ref, field_name) is not None:
                fail(f"{location}.{to_camel(field_name)}", "only a source can name this")
        if ref.dead_letter_queue:
            fail(f"{location}.deadLetterQueue", "a dead-letter queue cannot be a target")
        return
    if is_topic and ref.subscription is None:
        fail(
            f"{location}.subscription", f"'{ref.entity}' is a topic: name the subscription to read"
        )
    if not is_topic and ref.subscription is not None:
        fail(f"{location}.subscription", f"'{ref.entity}' is not a topic")
    if is_hub and ref.consumer_group is None:
        fail(f"{location}.consumerGroup", "an event hub source needs a consumerGroup")
    if not is_hub and ref.consumer_group is not None:
        fail(f"{location}.consumerGroup", "only event hub sources have consumer groups")
    if is_hub and ref.dead_letter_queue:
        fail(f"{location}.deadLetterQueue", "event hubs have no dead-letter queue")


def _check_managed_subscription(topology: Topology, task: TaskSpec, here: str, fail: Any) -> None:
    """A subscription a task reads is created by the task; hand-written rules there conflict."""
    source = task.source
    if source.subscription is None:
        return
    namespace = topology.namespace(source.namespace)
    for topic in namespace.topics:
        if topic.name != source.entity:
            continue
        for subscription in topic.subscriptions:
            if subscription.name == source.subscription and subscription.rules:
                from patterns import load_pattern

                if load_pattern(task.pattern).subscription_rule(topology.pattern_options(task)):
                    fail(
                        f"{here}.source.subscription",
                        f"subscription '{subscription.name}' gets its loop-prevention rule from "
                        f"task '{task.name}' (pattern {task.pattern}); remove its 'rules'",
                    )


def parse_topology(document: Mapping[str, Any], *, source: str = "<topology>") -> Topology:
    """Validate an already-decoded topology document (see :func:`load_topology`)."""
    try:
        topology = Topology.model_validate(document)
    except ValidationError as error:
        raise _format_validation_error(error, source) from None
    _check_references(topology, source)
    return topology


def load_topology(path: str | os.PathLike[str] | None = None) -> Topology:
    """Read and validate the topology file.

    ``path`` defaults to the ``REPLICATION_TOPOLOGY`` setting, then ``topology.json``.

    Raises:
        ConfigurationError: the file is missing, is not JSON, or is not a valid topology; the
            message names the file and the JSON path.
    """
    location = Path(
        path if path is not None else os.environ.get(TOPOLOGY_SETTING, DEFAULT_TOPOLOGY_PATH)
    )
    source = str(location)
    try:
        text = location.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigurationError(
            f"topology file not found (set {TOPOLOGY_SETTING} or pass --topology)", source=source
        ) from None
    except OSError as error:
        raise ConfigurationError(f"cannot read topology file: {error}", source=source) from error
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigurationError(
            f"line {error.lineno} column {error.colno}: invalid JSON: {error.msg}", source=source
        ) from None
    if not isinstance(document, dict):
        raise ConfigurationError("the topology must be a JSON object", source=source, location="$")
    return parse_topology(document, source=source)


def slug(name: str) -> str:
    """A name made safe for Function names and Azure resource names (letters, digits, dashes)."""
    return re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-").lower()


__all__ = [
    "DEFAULT_CONSUMER_GROUP",
    "DEFAULT_RULE_NAME",
    "DEFAULT_TOPOLOGY_PATH",
    "TOPOLOGY_SETTING",
    "CorrelationFilterSpec",
    "EntityRef",
    "EventHubSpec",
    "NamespaceKind",
    "NamespaceSpec",
    "QueueSpec",
    "RuleFilterSpec",
    "RuleSpec",
    "SqlRuleRef",
    "SubscriptionSpec",
    "TaskSpec",
    "TopicSpec",
    "Topology",
    "json_path",
    "load_topology",
    "parse_topology",
    "slug",
]

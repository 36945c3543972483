"""The binding document: which namespace each client of one application uses, per role.

One JSON document per application (a blob ``bindings/<app>.json`` in the binding store, see
:mod:`replication.transport.failover`) says where the application's publishers send and
its consumers read. A rule may be narrowed to one instance (``instance``, the client's own
identity, e.g. a host name) and to one entity; the most specific matching rule wins (instance
and entity, then instance, then entity, then the application's default rule). Publishers and
consumers are bound separately because a planned switch moves them at different moments
(publishers first, then consumers once replication has caught up; see
:mod:`replication.failover._plan`)::

    {
      "schema": 1,
      "app": "orders-app",
      "generation": 4,
      "namespaces": ["primary", "secondary"],
      "bindings": [
        {"publish": "primary", "consume": "primary"},
        {"entity": "orders", "publish": "secondary", "consume": "secondary"}
      ],
      "switch": null,
      "history": [...]
    }

``generation`` grows by one with every change, so a client can tell an operator's decision from
the state it already follows. ``switch`` describes a switch in progress (its phase, for
``status`` and for the operator who finds a switch that did not finish); ``history`` keeps the
last :data:`HISTORY_LENGTH` switches. Mutual exclusion of switches is the store's blob lease, not
this field. A switch record carries ``restore``, the exact rule of the switched clients as the
switch found it before its first write (:class:`RestorePoint`): a switch that gives up, and
one that took over from a switch that died, puts back that, not what the interrupted switch had
already changed.

:func:`parse_bindings` raises :class:`BindingDocumentError` naming the blob and the JSON path of
the first problem; clients then keep the namespace they last used (see
:mod:`replication.failover._follower`).
"""

from __future__ import annotations

import enum
import json
from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import Field, ValidationError, model_validator

from replication.exceptions import BindingDocumentError
from replication.rules import SpecModel
from replication.topology import json_path

SCHEMA: Literal[1] = 1
HISTORY_LENGTH = 20
_NAME = r"^[A-Za-z0-9][A-Za-z0-9._\-/~:]{0,259}$"


class Role(enum.StrEnum):
    """What a client does with the entity: send to it, or receive from it."""

    PUBLISH = "publish"
    CONSUME = "consume"


class SwitchKind(enum.StrEnum):
    PLANNED = "planned"
    FORCED = "forced"


Name = Annotated[str, Field(pattern=_NAME)]


class BindingRule(SpecModel):
    """Where the clients this rule matches publish and consume."""

    instance: Name | None = None
    entity: Name | None = None
    publish: Name
    consume: Name

    def matches(self, instance: str | None, entity: str | None) -> bool:
        return (self.instance is None or self.instance == instance) and (
            self.entity is None or self.entity == entity
        )

    @property
    def specificity(self) -> int:
        return (2 if self.instance is not None else 0) + (1 if self.entity is not None else 0)

    def namespace(self, role: Role) -> str:
        return self.publish if role is Role.PUBLISH else self.consume


class RestorePoint(SpecModel):
    """The exact rule of a switch's clients before its first write: ``publish`` and
    ``consume``, or neither when there was no rule for exactly those clients (they resolved a
    broader one)."""

    publish: Name | None = None
    consume: Name | None = None

    @model_validator(mode="after")
    def _both_or_neither(self) -> RestorePoint:
        if (self.publish is None) != (self.consume is None):
            raise ValueError("a restore point names both publish and consume, or neither")
        return self


class SwitchRecord(SpecModel):
    """A switch: started (``finished_at`` None while it runs) or done, with its outcome."""

    id: Name
    kind: SwitchKind
    source: Name
    target: Name
    instance: Name | None = None
    entity: Name | None = None
    phase: str
    started_at: datetime
    by: str
    finished_at: datetime | None = None
    outcome: str | None = None
    unreplicated: int | None = None
    """A forced switch: the messages (or events) its tasks' sources had not replicated when
    the clients moved, read just after (None: the source could not be read, or not yet);
    parked and dead-lettered ones are printed after the switch, not counted here. A planned
    one: 0."""
    restore: RestorePoint | None = None
    """The clients' exact rule before the switch's first write (None: a record written before
    this field existed)."""


class BindingDocument(SpecModel):
    """One application's bindings (see the module docstring)."""

    schema_: Literal[1] = Field(default=SCHEMA, alias="schema")
    app: Name
    generation: Annotated[int, Field(ge=0)] = 0
    namespaces: Annotated[list[Name], Field(min_length=1)]
    bindings: list[BindingRule] = Field(default_factory=list)
    switch: SwitchRecord | None = None
    history: list[SwitchRecord] = Field(default_factory=list)

    @model_validator(mode="after")
    def _names_known(self) -> BindingDocument:
        known = set(self.namespaces)
        for index, rule in enumerate(self.bindings):
            for role in Role:
                name = rule.namespace(role)
                if name not in known:
                    raise ValueError(
                        f"bindings[{index}].{role.value}: unknown namespace {name!r}; "
                        f"known: {', '.join(self.namespaces)}"
                    )
        return self

    def rule_for(self, instance: str | None, entity: str | None) -> BindingRule | None:
        """The most specific rule matching the client, or None when none matches."""
        matching = [rule for rule in self.bindings if rule.matches(instance, entity)]
        return max(matching, key=lambda rule: rule.specificity, default=None)

    def resolve(self, instance: str | None, entity: str | None, role: Role) -> str | None:
        """The namespace the client uses for ``role``, or None when no rule matches it."""
        rule = self.rule_for(instance, entity)
        return None if rule is None else rule.namespace(role)

    def bound(
        self,
        *,
        instance: str | None,
        entity: str | None,
        publish: str | None = None,
        consume: str | None = None,
        default: str,
    ) -> BindingDocument:
        """A new generation with the exact rule for (``instance``, ``entity``) set; the roles
        not given keep what the client resolves to now (``default`` when nothing matches)."""
        current = self.rule_for(instance, entity)
        rule = BindingRule(
            instance=instance,
            entity=entity,
            publish=publish or (current.publish if current else default),
            consume=consume or (current.consume if current else default),
        )
        rules = [r for r in self.bindings if (r.instance, r.entity) != (instance, entity)]
        # A namespace the document does not list yet (the topology grew) is added: a rule
        # naming an unlisted one would make every client refuse the document.
        names = list(dict.fromkeys([*self.namespaces, rule.publish, rule.consume]))
        return self.model_copy(
            update={
                "bindings": [*rules, rule],
                "namespaces": names,
                "generation": self.generation + 1,
            }
        )

    def restore_point(self, instance: str | None, entity: str | None) -> RestorePoint:
        """The exact rule of (``instance``, ``entity``) as it is now."""
        for rule in self.bindings:
            if (rule.instance, rule.entity) == (instance, entity):
                return RestorePoint(publish=rule.publish, consume=rule.consume)
        return RestorePoint()

    def restored(
        self, instance: str | None, entity: str | None, point: RestorePoint
    ) -> BindingDocument:
        """A new generation with the exact rule of (``instance``, ``entity``) as ``point`` says
        (removed when it names none)."""
        rules = [r for r in self.bindings if (r.instance, r.entity) != (instance, entity)]
        if point.publish is not None and point.consume is not None:
            rules.append(
                BindingRule(
                    instance=instance,
                    entity=entity,
                    publish=point.publish,
                    consume=point.consume,
                )
            )
        return self.model_copy(update={"bindings": rules, "generation": self.generation + 1})

    def with_last_switch(self, record: SwitchRecord) -> BindingDocument:
        """A new generation with the newest history entry replaced by ``record`` (a forced
        switch's count, known only after it moved the clients)."""
        history = [*self.history[:-1], record] if self.history else [record]
        return self.model_copy(update={"history": history, "generation": self.generation + 1})

    def with_switch(self, switch: SwitchRecord | None) -> BindingDocument:
        """A new generation with ``switch`` as the switch in progress (None: none); a finished
        switch goes to the history."""
        history = list(self.history)
        if switch is not None and switch.finished_at is not None:
            history = [*history, switch][-HISTORY_LENGTH:]
            switch = None
        return self.model_copy(
            update={"switch": switch, "history": history, "generation": self.generation + 1}
        )


def new_document(app: str, namespaces: list[str], active: str) -> BindingDocument:
    """The first document of ``app``: every client on ``active``."""
    return BindingDocument(
        app=app,
        namespaces=namespaces,
        bindings=[BindingRule(publish=active, consume=active)],
    )


def parse_bindings(data: bytes, *, source: str) -> BindingDocument:
    """The document in ``data`` (``source`` names the blob in errors).

    Raises:
        BindingDocumentError: not UTF-8 JSON, or not a valid binding document.
    """
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise BindingDocumentError(f"not a JSON document: {error}", source=source) from None
    try:
        return BindingDocument.model_validate(document)
    except ValidationError as error:
        first = error.errors()[0]
        message = str(first["msg"]).removeprefix("Value error, ")
        location = json_path(first["loc"]) if first["loc"] else None
        raise BindingDocumentError(message, source=source, location=location) from None


def render_bindings(document: BindingDocument) -> bytes:
    """The document as the JSON the store holds."""
    return document.model_dump_json(by_alias=True, indent=2, exclude_none=False).encode("utf-8")


def now_utc() -> datetime:
    return datetime.now(UTC)


__all__ = [
    "HISTORY_LENGTH",
    "SCHEMA",
    "BindingDocument",
    "BindingDocumentError",
    "BindingRule",
    "RestorePoint",
    "Role",
    "SwitchKind",
    "SwitchRecord",
    "new_document",
    "now_utc",
    "parse_bindings",
    "render_bindings",
]

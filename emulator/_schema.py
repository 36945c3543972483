"""The types of the emulator configuration's fields, checked before anything reads them.

Microsoft's emulators define the file's shape (``ServiceBus-Emulator/Schema/Config-schema.json``
in Azure/azure-service-bus-emulator-installer, and the Event Hubs installer's equivalent);
:mod:`._config` reads the values. This module only says which field has which JSON type, with
pydantic in strict mode, so that ``"MaxDeliveryCount": "ten"``, ``"Queues": {}`` or a rule
without ``Properties`` is one error naming the JSON path instead of a traceback (or, for a
mapping where a list belongs, an entity silently left out). Unknown keys are allowed: the
official files carry some this emulator ignores (``Logging``, ``Type``).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from replication.exceptions import ConfigurationError


class _Shape(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)


class _EntityProperties(_Shape):
    MaxDeliveryCount: int | None = None
    LockDuration: str | None = None
    DefaultMessageTimeToLive: str | None = None
    DuplicateDetectionHistoryTimeWindow: str | None = None
    DeadLetteringOnMessageExpiration: bool | None = None
    RequiresDuplicateDetection: bool | None = None
    RequiresSession: bool | None = None
    ForwardTo: str | None = None
    ForwardDeadLetteredMessagesTo: str | None = None


class _Expression(_Shape):
    SqlExpression: str | None = None


class _RuleProperties(_Shape):
    FilterType: str | None = None
    SqlFilter: _Expression | None = None
    CorrelationFilter: dict[str, Any] | None = None
    Action: _Expression | None = None


class _Rule(_Shape):
    Name: str
    Properties: _RuleProperties


class _Subscription(_Shape):
    Name: str
    Properties: _EntityProperties | None = None
    Rules: list[_Rule] | None = None


class _Queue(_Shape):
    Name: str
    Properties: _EntityProperties | None = None


class _Topic(_Shape):
    Name: str
    Properties: _EntityProperties | None = None
    Subscriptions: list[_Subscription] | None = None


class _ServiceBusNamespace(_Shape):
    Name: str
    Port: int | None = None
    MaxMessageSizeInKilobytes: int | None = None
    Queues: list[_Queue] | None = None
    Topics: list[_Topic] | None = None


class _ConsumerGroup(_Shape):
    Name: str


class _EventHub(_Shape):
    Name: str
    PartitionCount: int | None = None
    ConsumerGroups: list[_ConsumerGroup] | None = None


class _EventHubsNamespace(_Shape):
    Name: str
    Port: int | None = None
    Entities: list[_EventHub] | None = None


class _UserConfig(_Shape):
    Namespaces: list[_ServiceBusNamespace] | None = None
    NamespaceConfig: list[_EventHubsNamespace] | None = None


class _Document(_Shape):
    UserConfig: _UserConfig = Field(...)


_MESSAGES = {
    "int_type": "expected a whole number",
    "string_type": "expected a string",
    "bool_type": "expected true or false",
    "list_type": "expected a list",
    "model_type": "expected an object",
    "dict_type": "expected an object",
    "missing": "required",
}


def check_shape(document: Any, source: str | None = None) -> None:
    """Raise a :class:`ConfigurationError` naming the JSON path of the first field whose
    JSON type is wrong (or that is missing)."""
    try:
        _Document.model_validate(document)
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        path = ""
        for part in first["loc"]:
            path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
        problem = _MESSAGES.get(first["type"], first["msg"])
        if first["type"] != "missing":
            problem += f", found {first['input']!r}"[:120]
        raise ConfigurationError(problem, source=source, location=path or None) from None


__all__ = ["check_shape"]

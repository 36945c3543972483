"""Load the emulator configuration: the official emulators' Config.json schemas, several
namespaces per file allowed, each optionally with its own ``Port``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import json5

from replication.durations import parse_iso8601
from replication.exceptions import ConfigurationError
from replication.sql import SqlRuleAction, SqlSyntaxError

from ._eventhubs import EventHub, EventHubsBroker
from ._schema import check_shape
from ._servicebus import (
    Broker,
    EntitySettings,
    Rule,
    Subscription,
    correlation_matcher,
    sql_rule,
)


def duration(value: Any, where: str) -> float:
    """ISO-8601 duration (``PT1M``, ``P1D``) -> seconds."""
    try:
        return parse_iso8601(value).total_seconds()
    except ValueError as error:
        raise ConfigurationError(str(error), location=where) from None


def _settings(properties: dict[str, Any], where: str) -> EntitySettings:
    settings = EntitySettings()
    settings.requires_session = bool(properties.get("RequiresSession", False))
    if "MaxDeliveryCount" in properties:
        settings.max_delivery_count = int(properties["MaxDeliveryCount"])
    if "LockDuration" in properties:
        settings.lock_duration = duration(properties["LockDuration"], f"{where}.LockDuration")
    if "DefaultMessageTimeToLive" in properties:
        settings.default_ttl = duration(
            properties["DefaultMessageTimeToLive"], f"{where}.DefaultMessageTimeToLive"
        )
    if "DuplicateDetectionHistoryTimeWindow" in properties:
        settings.duplicate_window = duration(
            properties["DuplicateDetectionHistoryTimeWindow"],
            f"{where}.DuplicateDetectionHistoryTimeWindow",
        )
    settings.dead_lettering_on_expiration = bool(
        properties.get("DeadLetteringOnMessageExpiration", False)
    )
    settings.requires_duplicate_detection = bool(
        properties.get("RequiresDuplicateDetection", False)
    )
    settings.forward_to = properties.get("ForwardTo") or None
    settings.forward_dead_lettered_to = properties.get("ForwardDeadLetteredMessagesTo") or None
    return settings


def _rules(rules: list[dict[str, Any]], where: str) -> list[Any]:
    compiled = []
    for index, rule in enumerate(rules):
        here = f"{where}.Rules[{index}]"
        properties = rule.get("Properties", {})
        kind = properties.get("FilterType", "Sql")
        action = (properties.get("Action") or {}).get("SqlExpression")
        try:
            if kind == "Sql":
                expression = (properties.get("SqlFilter") or {}).get("SqlExpression")
                if not expression:
                    raise ConfigurationError(
                        "a Sql rule needs SqlFilter.SqlExpression", location=here
                    )
                compiled.append(sql_rule(rule.get("Name", f"rule{index}"), expression, action))
            elif kind == "Correlation":
                matcher = correlation_matcher(properties.get("CorrelationFilter") or {})
                compiled.append(
                    Rule(rule.get("Name", ""), matcher, SqlRuleAction(action) if action else None)
                )
            else:
                raise ConfigurationError(
                    f"unknown FilterType {kind!r} (Sql or Correlation)", location=here
                )
        except SqlSyntaxError as error:
            raise ConfigurationError(f"rule {rule.get('Name')}: {error}", location=here) from None
    if not compiled:
        compiled.append(sql_rule("$Default", "1=1", None))
    return compiled


def build_broker(namespace: dict[str, Any], where: str) -> Broker:
    broker = Broker()
    if "MaxMessageSizeInKilobytes" in namespace:
        # This emulator's extension of the config (like "Port"), after ARM's entity property:
        # Premium namespaces take messages of 1 MB and more, Standard 256 KB.
        size = namespace["MaxMessageSizeInKilobytes"]
        if not isinstance(size, int) or not 1 <= size <= 102_400:
            raise ConfigurationError(
                f"{size!r} is not a size in kilobytes between 1 and 102400",
                location=f"{where}.MaxMessageSizeInKilobytes",
            )
        broker.max_message_size = size * 1024
    for index, queue in enumerate(namespace.get("Queues") or []):
        here = f"{where}.Queues[{index}]"
        broker.add_queue(_name(queue, here), _settings(queue.get("Properties") or {}, here))
    for index, topic_spec in enumerate(namespace.get("Topics") or []):
        here = f"{where}.Topics[{index}]"
        topic = broker.add_topic(
            _name(topic_spec, here), _settings(topic_spec.get("Properties") or {}, here)
        )
        for s, subscription in enumerate(topic_spec.get("Subscriptions") or []):
            sub_here = f"{here}.Subscriptions[{s}]"
            name = _name(subscription, sub_here)
            topic.subscriptions[name] = Subscription(
                f"{topic.name}/Subscriptions/{name}",
                _settings(subscription.get("Properties") or {}, sub_here),
                broker,
                _rules(subscription.get("Rules") or [], sub_here),
            )
    _check_forwarding(namespace, broker, where)
    return broker


def _check_forwarding(namespace: dict[str, Any], broker: Broker, where: str) -> None:
    """Every ForwardTo / ForwardDeadLetteredMessagesTo names a queue or topic of this
    namespace: a message forwarded to nowhere would vanish."""
    entries: list[tuple[str, dict[str, Any]]] = [
        (f"{where}.Queues[{i}]", queue) for i, queue in enumerate(namespace.get("Queues") or [])
    ]
    for t, topic in enumerate(namespace.get("Topics") or []):
        for s, subscription in enumerate(topic.get("Subscriptions") or []):
            entries.append((f"{where}.Topics[{t}].Subscriptions[{s}]", subscription))
    for here, entry in entries:
        properties = entry.get("Properties") or {}
        for key in ("ForwardTo", "ForwardDeadLetteredMessagesTo"):
            target = properties.get(key)
            if target and not broker.is_sendable(str(target)):
                raise ConfigurationError(
                    f"{key} names {target!r}, which is no queue or topic of this namespace",
                    location=f"{here}.Properties.{key}",
                )


def _name(entry: dict[str, Any], where: str) -> str:
    name = entry.get("Name")
    if not isinstance(name, str) or not name:
        raise ConfigurationError("every entity needs a Name", location=where)
    return name


def parse_config_text(text: str) -> Any:
    """The document in ``text``, read as JSON5: JSON plus ``//`` and ``/* */`` comments and
    trailing commas.

    Microsoft's own emulator ``Config.json`` (Azure/azure-service-bus-emulator-installer,
    ``ServiceBus-Emulator/Config/Config.json``, the file their docker-compose templates mount)
    carries ``//`` comments, which .NET's reader skips and ``json.loads`` refuses. The ``json5``
    package reads JSON5, a superset of JSON, rather than a hand-written comment stripper that
    would have to know JSON's string escapes.

    Raises:
        ValueError: not JSON5, or nested too deeply; the message gives line and column.
    """
    try:
        return json5.loads(text)
    except RecursionError:
        raise ValueError("invalid JSON: nested too deeply") from None
    except ValueError as error:
        # json5 says "<string>:LINE Unexpected ... at column COLUMN".
        found = re.fullmatch(r"<string>:(\d+) (.*) at column (\d+)", str(error))
        where = f"line {found[1]} column {found[3]}: {found[2]}" if found else str(error)
        raise ValueError(f"invalid JSON: {where}") from None


def load_config(source: str | Path | dict[str, Any]) -> dict[str, Any]:
    """The configuration document, from a path or an already-decoded dict."""
    if isinstance(source, dict):
        check_shape(source)
        return source
    path = Path(source)
    try:
        document = parse_config_text(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigurationError("configuration file not found", source=str(path)) from None
    except ValueError as error:
        raise ConfigurationError(str(error), source=str(path)) from None
    if not isinstance(document, dict) or "UserConfig" not in document:
        raise ConfigurationError("expected an object with UserConfig", source=str(path))
    check_shape(document, str(path))
    return document


def servicebus_namespaces(document: dict[str, Any]) -> list[tuple[str, Broker, int]]:
    """(name, broker, port or 0) for each Service Bus namespace of the document."""
    namespaces = []
    seen: set[str] = set()
    for index, namespace in enumerate(document["UserConfig"].get("Namespaces") or []):
        where = f"UserConfig.Namespaces[{index}]"
        name = _name(namespace, where)
        if name.lower() in seen:
            raise ConfigurationError(f"duplicate namespace {name!r}", location=where)
        seen.add(name.lower())
        namespaces.append((name, build_broker(namespace, where), int(namespace.get("Port", 0))))
    return namespaces


def eventhubs_namespaces(document: dict[str, Any]) -> list[tuple[str, EventHubsBroker, int]]:
    """(name, broker, port or 0) for each Event Hubs namespace of the document."""
    namespaces = []
    for index, namespace in enumerate(document["UserConfig"].get("NamespaceConfig") or []):
        where = f"UserConfig.NamespaceConfig[{index}]"
        name = _name(namespace, where)
        broker = EventHubsBroker()
        for e, entity in enumerate(namespace.get("Entities") or []):
            here = f"{where}.Entities[{e}]"
            try:
                count = int(entity.get("PartitionCount", 1))
            except (TypeError, ValueError):
                raise ConfigurationError("PartitionCount must be a number", location=here) from None
            if not 1 <= count <= 32:
                raise ConfigurationError("PartitionCount must be 1 to 32", location=here)
            groups = [g.get("Name", "") for g in entity.get("ConsumerGroups") or []]
            broker.add(EventHub(_name(entity, here), count, groups))
        namespaces.append((name, broker, int(namespace.get("Port", 0))))
    return namespaces

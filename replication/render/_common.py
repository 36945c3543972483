"""Helpers shared by the renderers: durations, entity settings and resource names."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from replication.durations import format_iso8601
from replication.topology import NamespaceSpec, QueueSpec, SubscriptionSpec, Topology


def iso_duration(value: timedelta) -> str:
    """ISO-8601 duration as ARM and the emulators write it: ``PT2M``, ``P14D``, ``PT0.5S``."""
    return format_iso8601(value)


def entity_settings(entity: QueueSpec | SubscriptionSpec) -> dict[str, Any]:
    """The messaging settings of a queue or subscription, with ARM's camelCase names (the
    emulator's Config.json uses the same names in PascalCase: :func:`pascal_case`)."""
    settings: dict[str, Any] = {
        "maxDeliveryCount": entity.max_delivery_count,
        "lockDuration": iso_duration(entity.lock_duration),
        "deadLetteringOnMessageExpiration": entity.dead_lettering_on_message_expiration,
        "requiresSession": entity.requires_session,
    }
    if entity.default_message_time_to_live is not None:
        settings["defaultMessageTimeToLive"] = iso_duration(entity.default_message_time_to_live)
    if entity.forward_to:
        settings["forwardTo"] = entity.forward_to
    if entity.forward_dead_lettered_messages_to:
        settings["forwardDeadLetteredMessagesTo"] = entity.forward_dead_lettered_messages_to
    return settings


def pascal_case(settings: dict[str, Any]) -> dict[str, Any]:
    """``{"lockDuration": ...}`` -> ``{"LockDuration": ...}``."""
    return {key[:1].upper() + key[1:]: value for key, value in settings.items()}


def resource_name(namespace: NamespaceSpec) -> str:
    """The Azure resource name of a namespace: the first label of its host name."""
    return namespace.fully_qualified_namespace.split(".", 1)[0].split(":", 1)[0]


def provisioned(topology: Topology) -> list[NamespaceSpec]:
    """The namespaces this deployment creates: all but those of another tenant.

    A namespace with ``keyVaultSecret`` belongs to another tenant and is reached with the SAS
    connection string in that secret. It is referenced, never deployed: creating it here would
    collide with a global name someone else owns or, where the name is free, create a different
    namespace of ours (with local auth disabled, so the connection string could not work). Its
    entities, subscriptions and roles are its owner's to create; the az CLI script lists them.
    """
    return [namespace for namespace in topology.namespaces if not namespace.key_vault_secret]

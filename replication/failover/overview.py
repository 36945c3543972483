"""Where each application is bound: the binding documents of the failover store, for ``status``.

:func:`read_overview` reads every binding document of the store (``bindings/<app>.json``) and
returns, per application, its rules (who publishes and consumes where), the switch in progress
and the last one finished, or why the document cannot be used (the error names the blob and the
JSON path: a client reading it stays where it was). :func:`overview_lines` and
:func:`overview_json` are how ``status`` prints it. A store that cannot be reached is reported,
not raised; each read is bounded by the store's deadline.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from replication.exceptions import BindingDocumentError, FailoverStoreError
from replication.transport.failover import BlobFailoverStore

from ._bindings import BindingRule, SwitchRecord, parse_bindings


@dataclasses.dataclass(frozen=True, slots=True)
class ApplicationBinding:
    """One application's binding document as read (``error``: it cannot be used)."""

    app: str
    blob: str
    generation: int | None = None
    rules: tuple[BindingRule, ...] = ()
    switch: SwitchRecord | None = None
    last: SwitchRecord | None = None
    error: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class BindingOverview:
    """Every application's binding, or why the store could not be read."""

    container: str
    applications: tuple[ApplicationBinding, ...]
    error: str | None = None


def read_overview(store: BlobFailoverStore) -> BindingOverview:
    """Every binding document of ``store`` (see the module docstring)."""
    try:
        apps = store.binding_apps()
    except FailoverStoreError as error:
        return BindingOverview(store.container, (), str(error))
    found = []
    for app in apps:
        blob = store.describe(app)
        try:
            data, _ = store.read_bindings(app, None)
            if data is None:
                found.append(ApplicationBinding(app, blob, error="empty (a switch is creating it)"))
                continue
            document = parse_bindings(data, source=blob)
        except (FailoverStoreError, BindingDocumentError) as error:
            found.append(ApplicationBinding(app, blob, error=str(error)))
            continue
        found.append(
            ApplicationBinding(
                app,
                blob,
                document.generation,
                tuple(document.bindings),
                document.switch,
                document.history[-1] if document.history else None,
            )
        )
    return BindingOverview(store.container, tuple(found))


def _rule_text(rule: BindingRule) -> str:
    scope = "/".join(part for part in (rule.instance, rule.entity) if part) or "every client"
    return f"{scope}: publish {rule.publish}, consume {rule.consume}"


def _switch_text(record: SwitchRecord) -> str:
    text = f"{record.kind.value} {record.source} -> {record.target} by {record.by}"
    if record.finished_at is None:
        return f"{text}, started {record.started_at:%Y-%m-%d %H:%M:%S} UTC, phase {record.phase}"
    lost = "" if record.unreplicated is None else f", {record.unreplicated} not replicated"
    return f"{text} {record.finished_at:%Y-%m-%d %H:%M:%S} UTC: {record.outcome}{lost}"


def overview_lines(overview: BindingOverview) -> list[str]:
    """The overview as ``status`` prints it."""
    if overview.error is not None:
        return [f"bindings ({overview.container}): UNREACHABLE: {overview.error}"]
    lines = [f"bindings ({overview.container}):"]
    if not overview.applications:
        lines.append("  none (no switch was ever made: every client uses its first namespace)")
    for binding in overview.applications:
        if binding.error is not None:
            lines.append(f"  {binding.app}: UNUSABLE: {binding.error}")
            continue
        rules = "; ".join(_rule_text(rule) for rule in binding.rules) or "no rule"
        lines.append(f"  {binding.app} (generation {binding.generation}): {rules}")
        if binding.switch is not None:
            lines.append(f"      switch in progress: {_switch_text(binding.switch)}")
        if binding.last is not None:
            lines.append(f"      last switch: {_switch_text(binding.last)}")
    return lines


def _record_json(record: SwitchRecord | None) -> dict[str, Any] | None:
    return None if record is None else record.model_dump(mode="json", by_alias=True)


def overview_json(overview: BindingOverview) -> dict[str, Any]:
    """The overview as ``status --json`` prints it (key ``bindings``)."""
    return {
        "container": overview.container,
        "error": overview.error,
        "applications": [
            {
                "app": binding.app,
                "blob": binding.blob,
                "generation": binding.generation,
                "rules": [rule.model_dump(mode="json", by_alias=True) for rule in binding.rules],
                "switch": _record_json(binding.switch),
                "lastSwitch": _record_json(binding.last),
                "error": binding.error,
            }
            for binding in overview.applications
        ],
    }


__all__ = [
    "ApplicationBinding",
    "BindingOverview",
    "overview_json",
    "overview_lines",
    "read_overview",
]

"""Consolidation / normalization: many sources feed one target in a common shape.

One task per source entity, all with the same target. ``setProperties`` adds or overwrites
application properties (e.g. the source region) and ``renameProperties`` maps source-specific
property names to the common ones, so that consumers of the consolidated entity see one schema.
Neither may name a replication property (``repl-*``, ``replication``): loop prevention needs them.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field

from replication.envelope import Envelope
from replication.planning import Decision, Pattern, PatternOptions, TaskContext

from ._forwarding import forward_each
from ._property_edits import EditableName


class ConsolidationOptions(PatternOptions):
    """``setProperties`` and ``renameProperties`` (old name -> new name)."""

    set_properties: dict[EditableName, str | int | float | bool] = Field(default_factory=dict)
    """application properties every replica gets (the source region, say)"""
    rename_properties: dict[EditableName, EditableName] = Field(default_factory=dict)
    """application properties renamed to the common names (old name: new name)"""


def normalize(envelope: Envelope, options: ConsolidationOptions) -> Envelope:
    """Apply the renames, then the fixed properties."""
    properties = envelope.application_properties
    renamed = {
        new: properties[old] for old, new in options.rename_properties.items() if old in properties
    }
    updates = {**renamed, **options.set_properties}
    removed = tuple(old for old in options.rename_properties if old in properties)
    if not updates and not removed:
        return envelope
    return envelope.with_properties(updates, remove=removed)


def plan(
    batch: Sequence[Envelope], context: TaskContext, options: ConsolidationOptions
) -> list[Decision]:
    return forward_each(batch, context, transform=lambda e: normalize(e, options))


PATTERN: Pattern[ConsolidationOptions] = Pattern(
    name="consolidation",
    summary="merge several sources into one target, normalizing their properties",
    options_model=ConsolidationOptions,
    plan=plan,
)

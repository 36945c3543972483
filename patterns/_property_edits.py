"""The property names a task's options may edit: any but the replication properties.

``removeProperties``, ``setProperties`` and ``renameProperties`` (validation, consolidation)
shape a replica's application properties. Loop prevention rests on the replication properties
(``repl-path``, ``repl-hops``, ... and the ``replication`` flag; see
:mod:`replication.properties`): an option that removed or reset them would restart the recorded
path, and a ring of such tasks would replicate one message forever. :data:`EditableName` refuses
those names when the topology is loaded, so ``validate`` reports, e.g.::

    topology.json: tasks[2].options.removeProperties[0]: 'repl-path' is a replication
    property; editing it would defeat loop prevention

This check is for the operator; the forwarding step restores the replication properties of
every transformed replica anyway (options built without validation, ``model_construct``).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, WithJsonSchema

from replication.properties import REPLICATION_FLAG, RESERVED_PREFIX, reserved_property_problem


def _editable(name: str) -> str:
    problem = reserved_property_problem(name)
    if problem is not None:
        raise ValueError(problem)
    return name


def _any_case(text: str) -> str:
    """A regular expression matching ``text`` in any case (JSON Schema patterns have no flags)."""
    return "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else c for c in text)


RESERVED_PATTERN = f"^(?:{_any_case(RESERVED_PREFIX)}|{_any_case(REPLICATION_FLAG)}$)"
"""The reserved names as a regular expression, for the topology's JSON Schema."""

EditableName = Annotated[
    str,
    AfterValidator(_editable),
    WithJsonSchema(
        {
            "type": "string",
            "not": {"pattern": RESERVED_PATTERN},
            "description": "an application property name; not a replication property "
            "(repl-*, replication)",
        }
    ),
]
"""An application property name an option may remove, set or rename (not a reserved one)."""

__all__ = ["RESERVED_PATTERN", "EditableName"]

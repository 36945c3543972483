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

from pydantic import AfterValidator

from replication.properties import reserved_property_problem


def _editable(name: str) -> str:
    problem = reserved_property_problem(name)
    if problem is not None:
        raise ValueError(problem)
    return name


EditableName = Annotated[str, AfterValidator(_editable)]
"""An application property name an option may remove, set or rename (not a reserved one)."""

__all__ = ["EditableName"]

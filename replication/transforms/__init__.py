"""User code in the pipeline: transforms that reshape, split, skip or reject messages.

A *transform* is a function of yours that the runtime calls once per received message, before
the task's pattern plans it. It receives the message as an
:class:`~replication.envelope.Envelope` (frozen: change it with ``message.replace(body=...)``
or ``message.with_properties({...})``) and returns

- the replica to send (the message itself, or a changed copy);
- a list of replicas, for a split;
- :class:`SkipMessage` ``(reason)``: not replicated, settled, logged;
- :class:`RejectMessage` ``(reason)``: parked in the task's ``deadLetterTarget`` as
  ``TransformRejected``.

``def`` and ``async def`` are both accepted. The pattern then plans the replicas exactly as it
would plan received messages (validation checks them, routing routes them, a computed property
can choose the route), while loop prevention and stamping use what the message carried when it
was received (:mod:`._guard`): user code cannot take a message off its recorded path.

A task names its transform in the topology: ``"transform": "package.module:function"`` (imported
once, when the topology loads) or the name of a function registered in code with
:class:`Transforms` next to ``build_app``. A reference that does not import, or a function that
cannot take one message, fails loading with the file and JSON path.

Failures are contained per message: an exception, a call that outlasts its ``timeout`` or the
batch's budget, a result that is not one of the above, or a change to the replication properties
parks that message alone as ``TransformFailed`` (the description says what happened), and its
batch-mates are replicated. The runtime calls the function (``replication.runtime``), never the
pattern: patterns stay pure.

This package is the contract and the checks, with no I/O: results, references, the registry and
the guard. It depends on the value modules only, so the topology (which loads transforms) and the
runtime (which calls them) can both use it.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._function import DEFAULT_TIMEOUT, Transform, TransformSignatureError, check_signature
    from ._guard import (
        BROKER_FACTS,
        Checked,
        TransformFailure,
        changed_replication_properties,
        checked_result,
        failure_of,
    )
    from ._references import CodeReferenceError, add_code_root, import_reference
    from ._registry import Transforms, resolve_function
    from ._results import (
        TRANSFORM_FAILED,
        TRANSFORM_REJECTED,
        TRANSFORM_SKIPPED,
        RejectMessage,
        SkipMessage,
        TransformFunction,
        TransformResult,
    )

_MODULES = {
    "_function": ("DEFAULT_TIMEOUT", "Transform", "TransformSignatureError", "check_signature"),
    "_guard": (
        "BROKER_FACTS",
        "Checked",
        "TransformFailure",
        "changed_replication_properties",
        "checked_result",
        "failure_of",
    ),
    "_references": ("CodeReferenceError", "add_code_root", "import_reference"),
    "_registry": ("Transforms", "resolve_function"),
    "_results": (
        "TRANSFORM_FAILED",
        "TRANSFORM_REJECTED",
        "TRANSFORM_SKIPPED",
        "RejectMessage",
        "SkipMessage",
        "TransformFunction",
        "TransformResult",
    ),
}
_HOME = {name: module for module, names in _MODULES.items() for name in names}


def __getattr__(name: str) -> Any:
    """Each name imported from its module on first use: a topology without transforms, and
    the CLI (which only adds the code root to the import path), load only what they use
    (issue 37: the local host's start-up)."""
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "BROKER_FACTS",
    "DEFAULT_TIMEOUT",
    "TRANSFORM_FAILED",
    "TRANSFORM_REJECTED",
    "TRANSFORM_SKIPPED",
    "Checked",
    "CodeReferenceError",
    "RejectMessage",
    "SkipMessage",
    "Transform",
    "TransformFailure",
    "TransformFunction",
    "TransformResult",
    "TransformSignatureError",
    "Transforms",
    "add_code_root",
    "changed_replication_properties",
    "check_signature",
    "checked_result",
    "failure_of",
    "import_reference",
    "resolve_function",
]

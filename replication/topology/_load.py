"""Reading a topology file: JSON, the schema, the cross-references, every task resolved and
checked, then the tasks as they run (lanes and parking, :mod:`._lanes`; heartbeat paths,
:mod:`._heartbeats`).

The file is named by ``path``, else the app setting ``REPLICATION_TOPOLOGY``, else
``topology.json``. Every problem is reported as a
:class:`~replication.exceptions.ConfigurationError` whose message names the file, the JSON path
and what is wrong, one line per problem, e.g.::

    examples/bad.json: tasks[0].targets[0].namespace: unknown namespace 'neu' (known: weu, eus)
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from replication.exceptions import CodeReferenceError, ConfigurationError, TransformSignatureError
from replication.layout import EXAMPLES
from replication.planning import load_pattern
from replication.settings import DEFAULT_TOPOLOGY_PATH, TOPOLOGY_SETTING, Settings
from replication.transforms import add_code_root

from ._capture import add_captures
from ._checks import check_references, check_resolved, failer
from ._errors import format_validation_error
from ._heartbeats import add_heartbeats
from ._lanes import expand_tasks
from ._sessions import check_sessions
from ._tasks import ResolvedTask, resolve_task
from ._topology import Topology

if TYPE_CHECKING:
    from replication.transforms import Transforms


def parse_topology(
    document: Mapping[str, Any],
    *,
    source: str = "<topology>",
    transforms: Transforms | None = None,
    user_code: bool = True,
) -> Topology:
    """Validate an already-decoded topology document (see :func:`load_topology`)."""
    try:
        topology = Topology.model_validate(document)
    except ValidationError as error:
        raise format_validation_error(error, source, model=Topology) from None
    check_references(topology, source)
    resolved = {
        task.name: _resolve(
            topology, index, source, transforms, _transform_path(document, index), user_code
        )
        for index, task in enumerate(topology.tasks)
    }
    topology = topology.with_resolved(resolved)
    for index, task in enumerate(topology.resolved_tasks()):
        check_resolved(topology, task, index, source)
        check_sessions(topology, task, f"tasks[{index}]", failer(source))
    return add_heartbeats(add_captures(expand_tasks(topology, source), source), source)


def _transform_path(document: Mapping[str, Any], index: int) -> str:
    """Where task ``index`` names its transform's function: the value itself, or its
    ``function`` key when the file gives an object."""
    written = document["tasks"][index].get("transform")
    return f"tasks[{index}].transform" + (".function" if isinstance(written, dict) else "")


def _resolve(
    topology: Topology,
    index: int,
    source: str,
    transforms: Transforms | None,
    transform_path: str,
    user_code: bool,
) -> ResolvedTask:
    task = topology.tasks[index]
    try:
        return resolve_task(
            task, max_hops=topology.max_hops(task), transforms=transforms, user_code=user_code
        )
    except (CodeReferenceError, TransformSignatureError) as error:
        raise ConfigurationError(str(error), source=source, location=transform_path) from None
    except ValidationError as error:
        raise format_validation_error(
            error,
            source,
            model=load_pattern(task.pattern).options_model,
            prefix=(f"tasks[{index}].options",),
            unknown=f"unknown option for pattern '{task.pattern}'",
            first_only=True,
        ) from None


def _not_found(location: Path) -> str:
    """What to do about a topology file that is not there. The examples of a checkout's
    ``examples/`` are installed inside the package (:data:`~replication.layout.EXAMPLES`), where
    a path like ``examples/mesh.json`` finds nothing: ``replication init`` copies them out."""
    if (EXAMPLES.folder() / location.name).is_file():
        return (
            f"topology file not found; '{location.stem}' is a bundled example: "
            f"`replication init DIR --example {location.stem}` makes an app from it"
        )
    return (
        f"topology file not found (set {TOPOLOGY_SETTING} or pass --topology; "
        "`replication init DIR` makes an app with one)"
    )


def _read(location: Path, source: str) -> str:
    """The file's text: UTF-8, with or without a byte-order mark (Windows editors write one)."""
    try:
        data = location.read_bytes()
    except FileNotFoundError:
        raise ConfigurationError(_not_found(location), source=source) from None
    except IsADirectoryError:
        raise ConfigurationError("is a directory, not a topology file", source=source) from None
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise ConfigurationError(f"cannot read topology file: {reason}", source=source) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
        raise ConfigurationError(
            f"line {line} column {column}: not UTF-8 text (byte 0x{data[error.start]:02x}); "
            "save the file as UTF-8",
            source=source,
        ) from None


def _decode(text: str, source: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigurationError(
            f"line {error.lineno} column {error.colno}: invalid JSON: {error.msg}", source=source
        ) from None
    except RecursionError:
        raise ConfigurationError(
            "invalid JSON: arrays and objects are nested too deeply", source=source
        ) from None
    except ValueError as error:
        # json's other refusals, e.g. an integer of more than 4,300 digits (minus the advice
        # to change the interpreter's limit, which is not the reader's to change).
        reason = str(error).partition("; use sys.")[0]
        raise ConfigurationError(f"invalid JSON: {reason}", source=source) from None


def load_topology(
    path: str | os.PathLike[str] | None = None,
    *,
    transforms: Transforms | None = None,
    user_code: bool = True,
) -> Topology:
    """Read and validate the topology file.

    ``path`` defaults to the ``REPLICATION_TOPOLOGY`` setting, then ``topology.json``.
    ``transforms`` are the transforms registered in code that tasks may name (tasks may always
    name ``package.module:function``). ``user_code=False`` loads no transform (the emulator, the
    renderers and the linters need the entities, not the code, and may run where the app's
    modules are not installed); a runner refuses a task loaded that way.

    Raises:
        ConfigurationError: the file is missing, unreadable, a directory, not UTF-8, not JSON
            (nested too deeply included), or not a valid topology; the message names the file
            and, when there is one, the line or JSON path.
    """
    location = Path(path if path is not None else Settings.from_environ().topology)
    source = str(location)
    # Modules the topology names (transforms, bodyModel) may sit beside it.
    add_code_root(location.parent, "the topology's folder")
    document = _decode(_read(location, source), source)
    if not isinstance(document, dict):
        raise ConfigurationError("the topology must be a JSON object", source=source, location="$")
    return parse_topology(document, source=source, transforms=transforms, user_code=user_code)


__all__ = ["DEFAULT_TOPOLOGY_PATH", "TOPOLOGY_SETTING", "load_topology", "parse_topology"]

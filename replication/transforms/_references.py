"""``package.module:attribute`` references to user code, imported once when a topology loads.

The topology names user code the way entry points do: a transform
(``"transform": "contoso.replication:mask_card"``), a pydantic model for the validation
pattern's ``bodyModel``. :func:`import_reference` imports the module and returns the attribute
(a dotted attribute path such as ``module:Class.method`` is followed). Every failure is a
:class:`CodeReferenceError` whose message says what is wrong in one line: a reference that is
not ``module:attribute``, a module that is not found (with the folders it was looked for in), a
module that fails to import (the exception's type and message), an attribute that is missing
(with a "did you mean"). The topology loader adds the file and JSON path.

**Where modules are found.** Besides ``sys.path`` (the installed packages, and the app's folder
where the Functions worker imports ``function_app.py``), every folder given to
:func:`add_code_root` is searched: :func:`~replication.topology.load_topology` adds the topology
file's folder, and the command line adds its working directory. So ``replication validate``
finds a module beside the topology (or in the current directory) whether it runs as the
console script or as ``python -m replication``, which alone puts the working directory on
``sys.path``. The folders are appended to ``sys.path``, after the installed packages, so a
file of the app never shadows an installed module of the same name.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from pathlib import Path

from replication.exceptions import CodeReferenceError

_CODE_ROOTS: dict[str, str] = {}
"""Folder -> why it is searched ("the topology's folder", "the current directory"), in the
order they were added."""


def add_code_root(folder: str | os.PathLike[str], why: str) -> None:
    """Search ``folder`` for the modules of references too (see the module docstring)."""
    resolved = str(Path(folder).resolve())
    _CODE_ROOTS.setdefault(resolved, why)
    if resolved not in sys.path:
        sys.path.append(resolved)


def _searched() -> str:
    roots = [f"{folder} ({why})" for folder, why in _CODE_ROOTS.items()]
    return ", ".join([*roots, "the installed packages"])


_REFERENCE = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*$")


def import_reference(reference: str) -> object:
    """The object ``reference`` (``package.module:attribute``) names, importing its module.

    Raises:
        CodeReferenceError: see the module docstring.
    """
    if not _REFERENCE.match(reference):
        raise CodeReferenceError(
            f"'{reference}' is not a reference to code: write 'package.module:function'"
        )
    module_name, _, attribute_path = reference.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name is not None and module_name.startswith(error.name):
            raise CodeReferenceError(
                f"module '{error.name}' not found in {_searched()}: put it beside the topology "
                "file (or function_app.py) or install it into the app's environment"
            ) from error
        raise CodeReferenceError(
            f"importing '{module_name}' failed: {type(error).__name__}: {error}"
        ) from error
    except Exception as error:
        raise CodeReferenceError(
            f"importing '{module_name}' failed: {type(error).__name__}: {error}"
        ) from error
    target: object = module
    walked = module_name
    for name in attribute_path.split("."):
        if not hasattr(target, name):
            public = [n for n in dir(target) if not n.startswith("_")]
            import difflib  # only for a name that is not found

            close = difflib.get_close_matches(name, public, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise CodeReferenceError(f"'{walked}' has no attribute '{name}'{hint}")
        target = getattr(target, name)
        walked = f"{walked}:{name}" if walked == module_name else f"{walked}.{name}"
    return target


__all__ = ["CodeReferenceError", "add_code_root", "import_reference"]

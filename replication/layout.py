"""Where the parts that live beside the library are found: in the wheel, or in a checkout.

The repository keeps five folders at its top level, where its layout promises them:
``patterns/`` (the federation patterns), ``emulator/`` (the local AMQP emulator), ``spark/``
(the duplicate audit), ``examples/`` (topologies and sample code) and ``infra/`` (the Bicep and
its scripts). The wheel installs each of them *inside* the library (``setup.py``), so that no
generic name like ``patterns`` or ``spark`` lands in a user's site-packages:

==============  ========================  =====================================
folder          installed as              in a checkout (or the deployed files)
==============  ========================  =====================================
``patterns/``   ``replication.patterns``  the top-level package ``patterns``
``emulator/``   ``replication.emulator``  the top-level package ``emulator``
``spark/``      ``replication.audit``     the top-level package ``spark``
``examples/``   ``replication.examples``  the folder ``examples/`` (data)
``infra/``      ``replication.infra``     the folder ``infra/`` (data)
==============  ========================  =====================================

Code that needs one of them asks :data:`PATTERNS`, :data:`EMULATOR`, :data:`AUDIT`,
:data:`EXAMPLES` or :data:`INFRA` here and never names either spelling itself. The installed
name wins when both exist. Inside those folders imports are relative, so the same files work
under both names. Nothing here imports the parts themselves: the library never depends on the
emulator or the audit (they depend on it); it starts them as processes.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
from pathlib import Path

CHECKOUT_ROOT = Path(__file__).resolve().parents[1]
"""The folder holding ``replication/``: a checkout's root, or site-packages when installed."""
IN_CHECKOUT = (CHECKOUT_ROOT / "pyproject.toml").is_file()
"""Whether the library is imported from a checkout (or a copy of its files), not installed."""


def child_environment() -> dict[str, str]:
    """Environment additions under which a child Python process imports this same library and
    its bundled parts: a checkout's root on ``PYTHONPATH`` when the library runs from a
    checkout (so the child's working directory does not matter), else nothing."""
    if not IN_CHECKOUT:
        return {}
    existing = os.environ.get("PYTHONPATH")
    root = str(CHECKOUT_ROOT)
    return {"PYTHONPATH": root if not existing else f"{root}{os.pathsep}{existing}"}


@dataclasses.dataclass(frozen=True, slots=True)
class Bundled:
    """One of the repository's top-level folders, as installed or as checked out."""

    folder_name: str
    """The folder's name in the repository (and the package name in a checkout)."""
    installed: str
    """The package the wheel installs it as."""

    def module(self) -> str:
        """The importable package name: the installed one, else the checkout's."""
        if importlib.util.find_spec(self.installed) is not None:
            return self.installed
        return self.folder_name

    def is_installed(self) -> bool:
        """Whether the wheel's copy is the one in use (not a checkout's folder)."""
        return self.module() == self.installed

    def folder(self) -> Path:
        """The folder on disk (raises FileNotFoundError when neither copy exists)."""
        spec = importlib.util.find_spec(self.installed)
        if spec is not None and spec.submodule_search_locations:
            return Path(next(iter(spec.submodule_search_locations)))
        checkout = CHECKOUT_ROOT / self.folder_name
        if checkout.is_dir():
            return checkout
        raise FileNotFoundError(
            f"neither {self.installed} (the installed library) nor {checkout} (a checkout) exists"
        )


PATTERNS = Bundled("patterns", "replication.patterns")
EMULATOR = Bundled("emulator", "replication.emulator")
AUDIT = Bundled("spark", "replication.audit")
EXAMPLES = Bundled("examples", "replication.examples")
INFRA = Bundled("infra", "replication.infra")

__all__ = [
    "AUDIT",
    "CHECKOUT_ROOT",
    "EMULATOR",
    "EXAMPLES",
    "INFRA",
    "IN_CHECKOUT",
    "PATTERNS",
    "Bundled",
    "child_environment",
]

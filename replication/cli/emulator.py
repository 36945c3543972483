"""``replication emulator``: the local AMQP emulator (extra ``local``), as
``python -m replication.emulator`` runs it.

The emulator depends on the library, never the other way round: this module finds it where
:data:`replication.layout.EMULATOR` says and hands it the parser and the parsed arguments.
"""

from __future__ import annotations

import argparse
import importlib
from types import ModuleType

from replication.layout import EMULATOR


def _cli() -> ModuleType:
    return importlib.import_module(f"{EMULATOR.module()}._cli")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = _cli().DESCRIPTION
    _cli().configure(parser)


def run(args: argparse.Namespace) -> int:
    code: int = _cli().run(args)
    return code

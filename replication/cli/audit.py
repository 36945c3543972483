"""``replication audit``: the Spark duplicate audit (extra ``audit``, and Java 17+), as
``python -m replication.audit`` runs it.

The audit depends on the library, never the other way round: this module finds it where
:data:`replication.layout.AUDIT` says and hands it the parser and the parsed arguments.
"""

from __future__ import annotations

import argparse
import importlib
import os
from types import ModuleType

from replication.exceptions import ConfigurationError
from replication.extras import require_java
from replication.layout import AUDIT


def _audit() -> ModuleType:
    return importlib.import_module(f"{AUDIT.module()}.dedup_audit")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = _audit().DESCRIPTION
    _audit().configure(parser)


def run(args: argparse.Namespace) -> int:
    module = _audit()
    try:
        module.prepare(args)
    except argparse.ArgumentTypeError as error:
        raise ConfigurationError(str(error), source="arguments") from None
    if not (args.remote or os.environ.get("SPARK_REMOTE")):
        # A Spark Connect client starts no JVM: the server runs Spark.
        require_java(needed_by="replication audit")
    code: int = module.run(args)
    return code

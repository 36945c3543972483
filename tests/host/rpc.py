"""The Functions host <-> language worker protocol (``FunctionRpc.proto``), compiled.

The protocol is public (Azure/azure-functions-language-worker-protobuf). A compiled copy ships in
the ``azure-functions-runtime-v1`` wheel on PyPI (under ``tests/protos/``, a package name that
would clash with ours if installed); ``./dev.sh test`` downloads that pinned wheel and extracts
the modules to ``.venv-host/rpc/azure_functions_rpc/`` (see ``dev.sh``). This module puts that
directory on ``sys.path`` and re-exports the generated module as :data:`protos`, the object the
Python proxy worker hands ``azure_functions_runtime`` as ``properties["protos"]``.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
RPC_DIR = Path(os.environ.get("REPLICATION_HOST_RPC", ROOT / ".venv-host" / "rpc"))


def load_protos() -> ModuleType:
    """The generated ``FunctionRpc_pb2`` module (raises with the setup command if missing)."""
    if not (RPC_DIR / "azure_functions_rpc" / "FunctionRpc_pb2.py").exists():
        raise ImportError(
            f"FunctionRpc_pb2 not found under {RPC_DIR}: run ./dev.sh test (it extracts it from "
            "the azure-functions-runtime-v1 wheel)"
        )
    if str(RPC_DIR) not in sys.path:
        sys.path.insert(0, str(RPC_DIR))
    return importlib.import_module("azure_functions_rpc.FunctionRpc_pb2")


protos = load_protos()

__all__ = ["protos"]

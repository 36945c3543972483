"""Extract the compiled ``FunctionRpc`` protocol modules from the azure-functions-runtime-v1 wheel.

    python tests/host/install_rpc.py WHEEL TARGET_DIR

The wheel ships them as ``tests/protos/*_pb2.py`` (its own test package); they are written to
``TARGET_DIR/azure_functions_rpc/`` with empty package files, so that importing them needs only
protobuf (the wheel's ``__init__`` would import grpc stubs the tests do not use). Run by
``./dev.sh test``.
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

PREFIX = "tests/protos/"
PACKAGE = "azure_functions_rpc"


def extract(wheel: Path, target: Path) -> list[Path]:
    written = []
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            if not (name.startswith(PREFIX) and name.endswith("_pb2.py")):
                continue
            path = target / PACKAGE / name.removeprefix(PREFIX)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(archive.read(name))
            written.append(path)
    if not written:
        raise SystemExit(f"{wheel}: no {PREFIX}*_pb2.py modules")
    for directory in {path.parent for path in written}:
        (directory / "__init__.py").write_text("")
    return written


if __name__ == "__main__":
    for path in extract(Path(sys.argv[1]), Path(sys.argv[2])):
        print(path)

"""The Functions host's side of the worker protocol, for driving the real Python worker.

:class:`WorkerSession` starts :mod:`tests.host.worker_process` (the worker runtime from PyPI
behind the proxy worker's dispatch) with the app settings as environment variables, as the host
does, and speaks ``FunctionRpc.proto`` to it in the host's order: ``WorkerInitRequest`` (the
app directory, the host's capabilities), ``FunctionsMetadataRequest`` (the worker indexes
``function_app.py`` and returns every function's bindings as the JSON the host reads),
``FunctionLoadRequest`` per function, then ``InvocationRequest`` s whose input data and trigger
metadata come from :mod:`tests.host.host_conversion`.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import struct
import subprocess
import sys
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from tests.host.rpc import protos

ROOT = Path(__file__).resolve().parents[2]
# The function app under test: this checkout, or another one (to show what an older version
# does with the same invocations).
APP_DIRECTORY = Path(os.environ.get("REPLICATION_HOST_APP_DIR", ROOT))
ISOLATED_SETTING = "REPLICATION_HOST_ISOLATE_FROM"
"""Set for the worker: the checkout it must keep off the app's import path."""

HOST_CAPABILITIES = {
    # What host 4.x's GrpcWorkerChannel.SendWorkerInitRequest announces outside V2 compatibility
    # mode and without the function data cache. The WORKER's answer is what decides how trigger
    # metadata is converted (GrpcMessageConversionExtensions reads the worker's capabilities).
    "MultiStream": "10",
}


@dataclass(frozen=True)
class IndexedFunction:
    """One function as the host learns it from the worker's metadata response."""

    function_id: str
    name: str
    bindings: list[dict[str, Any]]
    retry: Any
    metadata: Any

    @property
    def trigger(self) -> dict[str, Any]:
        (trigger,) = [b for b in self.bindings if b["type"].endswith("Trigger")]
        return trigger


class WorkerError(AssertionError):
    """The worker answered with a failure status."""


class WorkerSession:
    """One worker process for one function app (use as a context manager)."""

    def __init__(
        self,
        app_settings: Mapping[str, str],
        *,
        log: Path,
        app_directory: Path = APP_DIRECTORY,
        python: str = sys.executable,
        isolated: bool = False,
    ) -> None:
        """``app_directory``: the Function app to index (default: this checkout); ``python``:
        the interpreter whose environment the app runs in; ``isolated``: the worker drops this
        checkout from ``sys.path`` once the harness is loaded, so that the app imports the
        library from its own environment (an installed wheel), as a user's app does."""
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("SB_", "EH_", "REPLICATION_"))
        }
        env.update(app_settings)
        # The harness modules come from this checkout; the worker puts the app directory first
        # on sys.path before it imports function_app.py (and with it `replication`).
        env["PYTHONPATH"] = str(ROOT)
        if isolated:
            env[ISOLATED_SETTING] = str(ROOT)
        self._app_directory = app_directory
        self._log = log.open("ab")
        self._process = subprocess.Popen(
            [python, "-m", "tests.host.worker_process", str(app_directory)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=env,
            cwd=ROOT,
        )
        self._ids = itertools.count(1)
        self.capabilities: dict[str, str] = {}
        self.functions: dict[str, IndexedFunction] = {}
        self.log_path = log

    def __enter__(self) -> WorkerSession:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        assert self._process.stdin is not None
        with contextlib.suppress(OSError):
            self._process.stdin.close()
        try:
            self._process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._log.close()

    def _exchange(self, **content: Any) -> Any:
        request = protos.StreamingMessage(request_id=f"r{next(self._ids)}", **content)
        stdin: IO[bytes] | None = self._process.stdin
        stdout: IO[bytes] | None = self._process.stdout
        assert stdin is not None
        assert stdout is not None
        payload = request.SerializeToString()
        stdin.write(struct.pack(">I", len(payload)) + payload)
        stdin.flush()
        header = stdout.read(4)
        if len(header) < 4:
            raise WorkerError(f"the worker exited; its log: {self.log_tail()}")
        response = protos.StreamingMessage()
        response.ParseFromString(stdout.read(struct.unpack(">I", header)[0]))
        return response

    def log_tail(self, lines: int = 40) -> str:
        self._log.flush()
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def _check(self, result: Any, what: str) -> None:
        if result.status != protos.StatusResult.Success:
            raise WorkerError(f"{what} failed: {result.exception.message}\n{self.log_tail()}")

    def start(self) -> dict[str, IndexedFunction]:
        """Init, index and load every function; returns them by name."""
        init = self._exchange(
            worker_init_request=protos.WorkerInitRequest(
                host_version="4.1041.200",
                capabilities=HOST_CAPABILITIES,
                function_app_directory=str(self._app_directory),
            )
        ).worker_init_response
        self._check(init.result, "WorkerInitRequest")
        self.capabilities = dict(init.capabilities)
        indexed = self._exchange(
            functions_metadata_request=protos.FunctionsMetadataRequest(
                function_app_directory=str(self._app_directory)
            )
        ).function_metadata_response
        self._check(indexed.result, "FunctionsMetadataRequest")
        for metadata in indexed.function_metadata_results:
            function = IndexedFunction(
                function_id=metadata.function_id,
                name=metadata.name,
                bindings=[json.loads(raw) for raw in metadata.raw_bindings],
                retry=metadata.retry_options if metadata.HasField("retry_options") else None,
                metadata=metadata,
            )
            loaded = self._exchange(
                function_load_request=protos.FunctionLoadRequest(
                    function_id=function.function_id, metadata=metadata
                )
            ).function_load_response
            self._check(loaded.result, f"FunctionLoadRequest {function.name}")
            self.functions[function.name] = function
        return self.functions

    def invoke(
        self,
        function_name: str,
        input_data: Mapping[str, Any],
        trigger_metadata: Mapping[str, Any],
        *,
        retry_count: int | None = None,
    ) -> Any:
        """One invocation; returns the worker's ``InvocationResponse``."""
        function = self.functions[function_name]
        request = protos.InvocationRequest(
            invocation_id=str(uuid.uuid4()),
            function_id=function.function_id,
            input_data=[
                protos.ParameterBinding(name=name, data=data) for name, data in input_data.items()
            ],
            trace_context=protos.RpcTraceContext(
                trace_parent=f"00-{uuid.uuid4().hex}-{uuid.uuid4().hex[:16]}-00"
            ),
        )
        for key, value in trigger_metadata.items():
            request.trigger_metadata[key].CopyFrom(value)
        if retry_count is not None and function.retry is not None:
            request.retry_context.CopyFrom(
                protos.RetryContext(
                    retry_count=retry_count, max_retry_count=function.retry.max_retry_count
                )
            )
        return self._exchange(invocation_request=request).invocation_response

    def succeeded(self, response: Any) -> bool:
        return bool(response.result.status == protos.StatusResult.Success)


@contextlib.contextmanager
def worker(app_settings: Mapping[str, str], log: Path) -> Iterator[WorkerSession]:
    """A started worker session for the app configured by ``app_settings``."""
    with WorkerSession(app_settings, log=log) as session:
        session.start()
        yield session


__all__ = ["IndexedFunction", "WorkerError", "WorkerSession", "worker"]

"""The Python language worker as the Functions host starts it, minus the gRPC socket.

On Python 3.13 the host starts a thin "proxy worker" (Azure/azure-functions-python-worker,
``workers/proxy_worker/dispatcher.py``; shipped with the host, not on PyPI) that receives
``StreamingMessage`` s over gRPC and hands each request to the ``azure_functions_runtime``
library (PyPI), which does all the work: indexing ``function_app.py``, decoding input data and
trigger metadata, calling the function, encoding the response. This process does what the proxy
does with each message, with the same request object (``WorkerRequest(name, request,
properties)``, ``properties={"protos", "host"}`` for init) and the same call order
(``start_threadpool_executor`` before ``worker_init_request``), but reads the messages from a
pipe: length-prefixed serialized ``StreamingMessage`` s on stdin, responses on the original
stdout. Everything the runtime and the app print or log goes to stderr.

    python -m tests.host.worker_process APP_DIRECTORY
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import struct
import sys
from typing import IO, Any

from tests.host.rpc import protos


@dataclasses.dataclass
class WorkerRequest:
    """The proxy worker's request wrapper (``dispatcher.py``)."""

    name: str
    request: Any
    properties: dict[str, Any] | None = None


def read_message(stream: IO[bytes]) -> Any:
    header = stream.read(4)
    if len(header) < 4:
        return None
    (length,) = struct.unpack(">I", header)
    message = protos.StreamingMessage()
    message.ParseFromString(stream.read(length))
    return message


def write_message(stream: IO[bytes], message: Any) -> None:
    payload = message.SerializeToString()
    stream.write(struct.pack(">I", len(payload)) + payload)
    stream.flush()


async def dispatch(runtime: Any, request: Any) -> Any:
    """One request to the runtime, as the proxy's ``_dispatch_grpc_request`` routes it."""
    kind = request.WhichOneof("content")
    if kind == "worker_init_request":
        runtime.start_threadpool_executor()
        response = await runtime.worker_init_request(
            WorkerRequest("WorkerInitRequest", request, {"protos": protos, "host": "127.0.0.1"})
        )
        return protos.StreamingMessage(request_id=request.request_id, worker_init_response=response)
    if kind == "functions_metadata_request":
        response = await runtime.functions_metadata_request(
            WorkerRequest("WorkerMetadataRequest", request)
        )
        return protos.StreamingMessage(
            request_id=request.request_id, function_metadata_response=response
        )
    if kind == "function_load_request":
        response = await runtime.function_load_request(
            WorkerRequest("FunctionLoadRequest", request)
        )
        return protos.StreamingMessage(
            request_id=request.request_id, function_load_response=response
        )
    if kind == "invocation_request":
        response = await runtime.invocation_request(
            WorkerRequest("FunctionInvocationRequest", request)
        )
        return protos.StreamingMessage(request_id=request.request_id, invocation_response=response)
    raise ValueError(f"unexpected StreamingMessage content {kind!r}")


def main() -> int:
    app_directory = os.path.abspath(sys.argv[1])
    # The protocol channel is the original stdout; anything printed goes to stderr instead.
    channel = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
    )
    isolate_from = os.environ.get("REPLICATION_HOST_ISOLATE_FROM")
    if isolate_from:
        # A user's app: the harness is loaded; the library must come from the app's own
        # environment, not from this checkout (which PYTHONPATH put first).
        checkout = os.path.realpath(isolate_from)
        sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.curdir) != checkout]
    # The proxy's DependencyManager puts the app directory first on sys.path before it imports
    # the runtime, which then imports function_app.py from there.
    sys.path.insert(0, app_directory)
    os.chdir(app_directory)
    import azure_functions_runtime as runtime

    loop = asyncio.new_event_loop()
    requests = sys.stdin.buffer
    try:
        while (request := read_message(requests)) is not None:
            write_message(channel, loop.run_until_complete(dispatch(runtime, request)))
    finally:
        runtime.stop_threadpool_executor()
        loop.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

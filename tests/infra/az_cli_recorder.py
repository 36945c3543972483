"""Run az CLI commands with the real Azure CLI and record the ARM request each one sends.

Run with the Python of the az CLI environment (``.venv-azcli``, created by ``./dev.sh``):

    .venv-azcli/bin/python tests/infra/az_cli_recorder.py COMMANDS.jsonl REQUESTS.json

``COMMANDS.jsonl`` holds one JSON array of arguments per line (``["az", "servicebus", ...]``);
``REQUESTS.json`` receives, per command, its arguments and the HTTP requests it sent (method,
URL, JSON body) or the error the CLI reported.

Everything above HTTP is the real CLI: its argument parsing, validators, AAZ or SDK operation
and request serialization. Only the socket is replaced: ``requests``' ``HTTPAdapter.send`` (the
transport under both the Azure SDK pipeline and MSAL) answers locally instead of connecting,
so nothing leaves the machine. The answers are what Azure's endpoints return in shape:

- Entra ID (MSAL, for ``az login --service-principal``): the tenant's OpenID configuration and
  a client-credentials token;
- ARM ``GET /subscriptions`` (the login's subscription discovery): one subscription;
- any other ``GET``: 404 ``ResourceNotFound`` (nothing exists yet, as before a first deployment);
- ``PUT`` / ``PATCH``: 200 with the request body echoed back plus ``id`` / ``name``, which is
  how ARM answers a synchronous create-or-update of these child resources.

The login state lives in a temporary ``AZURE_CONFIG_DIR``; the credentials are made up.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import requests
from requests.adapters import HTTPAdapter
from urllib3.response import HTTPResponse

TENANT = "00000000-0000-0000-0000-0000000000aa"
SUBSCRIPTION = "00000000-0000-0000-0000-0000000000bb"
CLIENT = "00000000-0000-0000-0000-0000000000cc"

_recorded: list[dict[str, Any]] = []


def _response(request: requests.PreparedRequest, status: int, body: Any) -> requests.Response:
    content = json.dumps(body).encode()
    headers = {
        "Content-Type": "application/json; charset=utf-8",
        "Content-Length": str(len(content)),
    }
    response = requests.Response()
    response.status_code = status
    # What HTTPAdapter.build_response wraps: urllib3's response, which the SDK pipeline reads.
    response.raw = HTTPResponse(
        body=io.BytesIO(content), headers=headers, status=status, preload_content=False
    )
    response.headers.update(headers)
    response.url = request.url or ""
    response.request = request
    response.encoding = "utf-8"
    return response


def _openid_configuration(authority: str) -> dict[str, Any]:
    return {
        "token_endpoint": f"{authority}/oauth2/v2.0/token",
        "authorization_endpoint": f"{authority}/oauth2/v2.0/authorize",
        "device_authorization_endpoint": f"{authority}/oauth2/v2.0/devicecode",
        "issuer": f"https://login.microsoftonline.com/{TENANT}/v2.0",
        "end_session_endpoint": f"{authority}/oauth2/v2.0/logout",
        "jwks_uri": f"{authority}/discovery/v2.0/keys",
        "response_types_supported": ["code", "id_token", "token"],
    }


def _body(request: requests.PreparedRequest) -> Any:
    if not request.body:
        return None
    text = request.body.decode() if isinstance(request.body, bytes) else str(request.body)
    try:
        return json.loads(text)
    except ValueError:
        return text


def _answer(request: requests.PreparedRequest) -> requests.Response:
    url = urlsplit(request.url or "")
    method = (request.method or "GET").upper()
    if url.hostname == "login.microsoftonline.com":
        if url.path.endswith("/.well-known/openid-configuration"):
            authority = f"https://login.microsoftonline.com/{url.path.split('/')[1]}"
            return _response(request, 200, _openid_configuration(authority))
        if url.path.endswith("/oauth2/v2.0/token"):
            token = {"access_token": "recorded", "token_type": "Bearer", "expires_in": 3600}
            return _response(request, 200, token)
        return _response(request, 404, {"error": "not_stubbed", "path": url.path})
    path = url.path.rstrip("/")
    if method == "GET" and path == "/subscriptions":
        subscription = {
            "id": f"/subscriptions/{SUBSCRIPTION}",
            "subscriptionId": SUBSCRIPTION,
            "tenantId": TENANT,
            "displayName": "recorder",
            "state": "Enabled",
        }
        return _response(request, 200, {"value": [subscription]})
    _recorded.append({"method": method, "url": request.url, "body": _body(request)})
    if method in {"PUT", "PATCH"}:
        echoed = dict(_body(request) or {})
        echoed.update({"id": path, "name": path.rsplit("/", 1)[-1]})
        return _response(request, 200, echoed)
    if method == "GET":
        error = {"code": "ResourceNotFound", "message": f"{path} not found (recorder)"}
        return _response(request, 404, {"error": error})
    return _response(request, 200, {})


def _send(self: HTTPAdapter, request: requests.PreparedRequest, *args: Any, **kwargs: Any) -> Any:
    return _answer(request)


def main(commands_file: str, output_file: str) -> int:
    commands = [json.loads(line) for line in Path(commands_file).read_text().splitlines() if line]
    with tempfile.TemporaryDirectory(prefix="azure-config-") as config_dir:
        os.environ["AZURE_CONFIG_DIR"] = config_dir
        os.environ["AZURE_CORE_COLLECT_TELEMETRY"] = "false"
        os.environ["AZURE_CORE_NO_COLOR"] = "true"
        os.environ["AZURE_CORE_SURVEY_MESSAGE"] = "false"
        HTTPAdapter.send = _send  # type: ignore[method-assign]
        from azure.cli.core import get_default_cli

        login = ["login", "--service-principal", "--username", CLIENT, "--password", "made-up",
                 "--tenant", TENANT, "--output", "none"]  # fmt: skip
        if get_default_cli().invoke(login) != 0:
            raise SystemExit("az login against the stubbed transport failed")
        _recorded.clear()
        results = []
        for argv in commands:
            assert argv[0] == "az", argv
            errors = io.StringIO()
            with contextlib.redirect_stderr(errors):
                code = get_default_cli().invoke([*argv[1:], "--output", "none"])
            results.append(
                {"argv": argv, "exitCode": code, "errors": errors.getvalue(),
                 "requests": list(_recorded)}
            )  # fmt: skip
            _recorded.clear()
    Path(output_file).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))

"""The Bicep path and the az CLI path deploy the same resources with the same bodies.

For every example topology and the feature-complete one (``feature_topology.json``):

- **az CLI path**: the rendered script runs under bash exactly as a user runs it, with an ``az``
  on ``PATH`` that writes down its arguments; each command is then run by the real Azure CLI
  (``.venv-azcli``, requirements-azcli.txt) whose HTTP transport answers locally and records the
  ARM request (``az_cli_recorder.py``). The CLI's own parsing, validators and request building
  produce the bodies.
- **Bicep path**: ``infra/main.bicep`` evaluated with the rendered parameters
  (``bicep_eval.py``; no Bicep compiler is installable here).

Both become ``{resource id below /providers/: body}`` for every kind of resource the topology
produces (Service Bus and Event Hubs namespaces, queues, topics, subscriptions, rules, event hubs,
consumer groups, role assignments on entities, diagnostic settings on namespaces) and must be
equal. The normalizations, each one a value that ARM or the CLI fills in identically:

- ids: the CLI's subscription and resource group become the evaluator's placeholders;
- a role assignment is keyed by its scope, role and principal (its name is a ``guid()`` in
  Bicep and a random UUID in the CLI; ARM allows one assignment per principal, role and scope):
  a capture container may hold the same role twice, for an Event Hubs namespace's identity and
  for the Function app's (a Service Bus capture);
- the principals and the workspace, unknown before a Bicep deployment, are compared as markers,
  after checking that the CLI sent the values it was given;
- a SQL filter's ``compatibilityLevel`` 20, which Bicep states and the CLI cannot (no flag): ARM
  documents the property as "reserved for future use ... currently hard-coded to 20".
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest

from replication.render import az_cli_script
from tests.infra.bicep_eval import RESOURCE_GROUP, SUBSCRIPTION_ID, Deployment, Unknown
from tests.infra.deployments import FEATURE_TOPOLOGY, TOPOLOGIES, deploy, load
from tests.infra.tools import AZ_CLI_PYTHON, require

RECORDER = Path(__file__).resolve().parent / "az_cli_recorder.py"
RECORDED_SUBSCRIPTION = "00000000-0000-0000-0000-0000000000bb"
"""The subscription the recorder logs in to (az_cli_recorder.SUBSCRIPTION)."""
RESOURCE_GROUP_NAME = "rg-replication"
PRINCIPAL_ID = "11111111-2222-3333-4444-555555555555"
WORKSPACE_ID = (
    f"/subscriptions/{RECORDED_SUBSCRIPTION}/resourceGroups/{RESOURCE_GROUP_NAME}"
    "/providers/Microsoft.OperationalInsights/workspaces/log-replication"
)
PRINCIPAL, WORKSPACE = "<the Function app's principal>", "<the Log Analytics workspace>"

TOPOLOGY_KINDS = {
    "Microsoft.ServiceBus/namespaces",
    "Microsoft.ServiceBus/namespaces/queues",
    "Microsoft.ServiceBus/namespaces/topics",
    "Microsoft.ServiceBus/namespaces/topics/subscriptions",
    "Microsoft.ServiceBus/namespaces/topics/subscriptions/rules",
    "Microsoft.EventHub/namespaces",
    "Microsoft.EventHub/namespaces/eventhubs",
    "Microsoft.EventHub/namespaces/eventhubs/consumergroups",
    "Microsoft.Authorization/roleAssignments",
    "Microsoft.Insights/diagnosticSettings",
}
"""Every kind of resource a topology produces; the Function app, storage, Key Vault and alerts
are the Bicep files' alone (the az CLI script is for topologies without them)."""

CAPTURE_PRINCIPAL_ID = "66666666-7777-8888-9999-000000000000"
"""What the ``az`` on ``PATH`` answers a command's ``--query identity.principalId`` with: the
identity an Event Hubs namespace with Capture is created with (the script's
``CAPTURE_PRINCIPAL``)."""
CAPTURE_PRINCIPAL = "<a capturing namespace's principal>"
STORAGE = "Microsoft.Storage/"

BICEP_PRINCIPALS = {
    Unknown("app.identity.principalId"): PRINCIPAL,
    Unknown("eventHubs.identity.principalId"): CAPTURE_PRINCIPAL,
}
"""The principal of each role assignment the Bicep files declare -> its marker (any other is a
``KeyError``: a principal neither path grants roles to)."""
AZ_PRINCIPALS = {PRINCIPAL_ID: PRINCIPAL, CAPTURE_PRINCIPAL_ID: CAPTURE_PRINCIPAL}
"""The same for the principals the CLI sent (``PRINCIPAL_ID``, the ``CAPTURE_PRINCIPAL``)."""

_SHIM = """#!{python}
import json, os, sys
with open(os.environ["AZ_COMMANDS"], "a", encoding="utf-8") as commands:
    commands.write(json.dumps(["az", *sys.argv[1:]]) + "\\n")
if "identity.principalId" in sys.argv:
    print("{capture_principal}")
"""


def _kind(path: str) -> str:
    """``Microsoft.X/a/n1/b/n2`` (or an extension's ``.../providers/Microsoft.Y/c/n3``) -> its
    resource type (the extension's type for an extension resource)."""
    own = path.rsplit("/providers/", 1)[-1]
    namespace, *rest = own.split("/")
    return "/".join([namespace, *rest[0::2]])


def _normalized(body: dict[str, Any], kind: str, *, principal: str = PRINCIPAL) -> dict[str, Any]:
    body = copy.deepcopy(body)
    properties = body.get("properties", {})
    if kind == "Microsoft.Authorization/roleAssignments":
        properties["principalId"] = principal
    if kind == "Microsoft.Insights/diagnosticSettings":
        properties["workspaceId"] = WORKSPACE
    sql_filter = properties.get("sqlFilter", {})
    if sql_filter.get("compatibilityLevel") == 20:
        del sql_filter["compatibilityLevel"]
    return body


def _role_key(path: str, body: dict[str, Any], principal: str) -> str:
    scope = path.rsplit("/providers/", 1)[0]
    role = body["properties"]["roleDefinitionId"].rsplit("/", 1)[-1]
    return f"{scope}/providers/Microsoft.Authorization/roleAssignments/<{role} for {principal}>"


MESSAGING = ("Microsoft.ServiceBus/", "Microsoft.EventHub/")


def bicep_resources(deployment: Deployment) -> dict[str, dict[str, Any]]:
    """The deployment's resources in or on the messaging namespaces (what the topology
    produces), by id below ``/providers/``; the Function app's resources are left out."""
    found: dict[str, dict[str, Any]] = {}
    for resource in deployment.resources:
        path = resource.path
        if resource.existing:
            continue
        if isinstance(path, Unknown):
            # Only resources whose names depend on the deployment (the app, its storage and the
            # roles on them): never a namespace or an entity, whose names the topology gives.
            scope = resource.body.get("scope")
            assert not resource.type.startswith(MESSAGING), resource
            assert not getattr(scope, "type", "").startswith(MESSAGING), resource
            continue
        # Capture roles are on storage containers: an Event Hubs namespace's for its own
        # identity, a Service Bus capture's for the Function app's.
        on_container = path.startswith(STORAGE) and "/roleAssignments/" in path
        if not path.startswith(MESSAGING) and not on_container:
            continue
        kind = _kind(path)
        assert kind in TOPOLOGY_KINDS, path
        body = {k: v for k, v in resource.body.items() if k not in ("name", "scope", "parent",
                                                                      "dependsOn")}  # fmt: skip
        principal = PRINCIPAL
        if kind == "Microsoft.Authorization/roleAssignments":
            principal = BICEP_PRINCIPALS[resource.body["properties"]["principalId"]]
            assert principal == PRINCIPAL or on_container, path
            path = _role_key(path, body, principal)
        if kind == "Microsoft.Insights/diagnosticSettings":
            assert resource.body["properties"]["workspaceId"] == Unknown("logs.id"), path
        assert path not in found, f"{path} declared twice"
        found[path] = _normalized(body, kind, principal=principal)
    return found


def az_commands(script: str, directory: Path) -> list[list[str]]:
    """The az commands the rendered script runs, in order, recorded by an ``az`` on PATH."""
    shim_dir = directory / "bin"
    shim_dir.mkdir()
    shim = shim_dir / "az"
    shim.write_text(_SHIM.format(python=sys.executable, capture_principal=CAPTURE_PRINCIPAL_ID))
    shim.chmod(0o755)
    (directory / "provision.sh").write_text(script)
    commands_file = directory / "commands.jsonl"
    environment = {
        **os.environ,
        "PATH": f"{shim_dir}{os.pathsep}{os.environ['PATH']}",
        "AZ_COMMANDS": str(commands_file),
        "RESOURCE_GROUP": RESOURCE_GROUP_NAME,
        "PRINCIPAL_ID": PRINCIPAL_ID,
        "SUBSCRIPTION_ID": RECORDED_SUBSCRIPTION,
        "LOG_ANALYTICS_WORKSPACE_ID": WORKSPACE_ID,
    }
    subprocess.run(["bash", str(directory / "provision.sh")], env=environment, check=True)
    return [json.loads(line) for line in commands_file.read_text().splitlines()]


def az_requests(commands: list[list[str]], directory: Path) -> list[dict[str, Any]]:
    """What the real az CLI sends for each command (az_cli_recorder.py)."""
    python = require(AZ_CLI_PYTHON, "the Azure CLI environment (.venv-azcli)")
    commands_file, output = directory / "commands.jsonl", directory / "requests.json"
    commands_file.write_text("".join(json.dumps(c) + "\n" for c in commands))
    subprocess.run([str(python), str(RECORDER), str(commands_file), str(output)], check=True,
                   timeout=300)  # fmt: skip
    results: list[dict[str, Any]] = json.loads(output.read_text())
    return results


def az_resources(results: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The PUT of each command, by id below ``/providers/`` (one PUT per command)."""
    prefix = (
        f"/subscriptions/{RECORDED_SUBSCRIPTION}/resourceGroups/{RESOURCE_GROUP_NAME}/providers/"
    )
    found: dict[str, dict[str, Any]] = {}
    for result in results:
        command = " ".join(result["argv"])
        assert result["exitCode"] == 0, f"{command}\n{result['errors']}"
        writes = [r for r in result["requests"] if r["method"] != "GET"]
        assert [w["method"] for w in writes] == ["PUT"], command
        (put,) = writes
        path = unquote(urlsplit(put["url"]).path)
        assert path.startswith(prefix), path
        path = path.removeprefix(prefix)
        text = json.dumps(put["body"]).replace(
            f"/subscriptions/{RECORDED_SUBSCRIPTION}/resourceGroups/{RESOURCE_GROUP_NAME}/",
            f"/subscriptions/{SUBSCRIPTION_ID}/resourceGroups/{RESOURCE_GROUP}/",
        )
        body = json.loads(text.replace(RECORDED_SUBSCRIPTION, SUBSCRIPTION_ID))
        kind = _kind(path)
        principal = PRINCIPAL
        if kind == "Microsoft.Authorization/roleAssignments":
            principal = AZ_PRINCIPALS[body["properties"]["principalId"]]
            assert principal == PRINCIPAL or path.startswith(STORAGE), command
            path = _role_key(path, body, principal)
        if kind == "Microsoft.Insights/diagnosticSettings":
            assert put["body"]["properties"]["workspaceId"] == WORKSPACE_ID, command
        assert path not in found, f"{path} written twice"
        found[path] = _normalized(body, kind, principal=principal)
    return found


@pytest.mark.parametrize("topology_file", TOPOLOGIES, ids=lambda p: p.name)
def test_az_cli_and_bicep_send_the_same_resources(topology_file: Path, tmp_path: Path) -> None:
    topology = load(topology_file)
    commands = az_commands(az_cli_script(topology), tmp_path)
    from_az = az_resources(az_requests(commands, tmp_path))
    from_bicep = bicep_resources(deploy(topology))
    assert sorted(from_az) == sorted(from_bicep)
    for path, body in from_bicep.items():
        assert from_az[path] == body, path


def test_the_feature_topology_produces_every_kind_of_resource(tmp_path: Path) -> None:
    topology = load(FEATURE_TOPOLOGY)
    kinds = Counter(_kind(path) for path in bicep_resources(deploy(topology)))
    assert set(kinds) == TOPOLOGY_KINDS, kinds
    commands = az_commands(az_cli_script(topology), tmp_path)
    assert {_kind(p) for p in az_resources(az_requests(commands, tmp_path))} == TOPOLOGY_KINDS


def test_the_recorder_sees_what_the_cli_refuses(tmp_path: Path) -> None:
    """The recorder runs the CLI's own validators: a namespace name Azure rejects (shorter than
    6 characters) fails in the CLI before any request, so a wrong flag or value cannot pass."""
    (result,) = az_requests(
        [["az", "servicebus", "queue", "create", "--resource-group", "rg",
          "--namespace-name", "ns1", "--name", "jobs", "--max-delivery-count", "ten"]],
        tmp_path,
    )  # fmt: skip
    assert result["exitCode"] != 0
    assert result["requests"] == []

"""What a Service Bus namespace's ``capture`` section provisions for the Function app: the
least-privilege roles of its capture tasks (Data Receiver on each topic's ``replication-capture``
subscription, Storage Blob Data Contributor on each capture container, nothing broader) and the
``REPLICATION_CAPTURE_STORAGE`` identity settings, in the rendered Bicep parameters, app settings
and az CLI script alike.

The topology is the shipped two-region example with a second, unreplicated topic (captured all
the same), heartbeats (whose topic is never captured) and a ``capture`` section on both
namespaces, writing to the same container.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from replication.render import app_settings, az_cli_script, bicep_parameters
from replication.render.access import ENTITY_TYPES, RoleAssignment, role_assignments
from replication.settings import CAPTURE_STORAGE_SETTING
from replication.topology import (
    CAPTURE_SUBSCRIPTION,
    STORAGE_BLOB_DATA_CONTRIBUTOR,
    Topology,
    materialize,
    parse_topology,
)

ROOT = Path(__file__).resolve().parents[2]
TWO_REGIONS = ROOT / "examples" / "two-region-all-active.json"
SERVICEBUS_DATA_RECEIVER = "4f6d3b9b-027b-4f4c-9142-0e5a2a2247e0"
"""Azure Service Bus Data Receiver (Azure built-in roles, Integration)."""
CLIENT_ID = "00000000-0000-0000-0000-00000000000c"


def _document(**capture: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(TWO_REGIONS.read_text(encoding="utf-8"))
    document["namespaces"][0]["topics"].append({"name": "invoices"})
    document["heartbeats"] = {"enabled": True}
    for namespace in document["namespaces"]:
        namespace["capture"] = {"storageAccount": "stcontosocaptures", **capture}
    return document


def _topology(document: dict[str, Any]) -> Topology:
    return materialize(parse_topology(document, source="capture.json"))


def test_each_capture_reads_its_subscription_and_writes_its_container_only() -> None:
    roles = role_assignments(_topology(_document()))
    capture_readers = {
        (r.namespace, r.entity, r.role, r.role_definition_id)
        for r in roles
        if r.subscription == CAPTURE_SUBSCRIPTION
    }
    assert capture_readers == {
        ("contoso-orders-weu", "orders", "receiver", SERVICEBUS_DATA_RECEIVER),
        ("contoso-orders-weu", "invoices", "receiver", SERVICEBUS_DATA_RECEIVER),
        ("contoso-orders-neu", "orders", "receiver", SERVICEBUS_DATA_RECEIVER),
    }
    assert {r.entity_type for r in roles if r.subscription == CAPTURE_SUBSCRIPTION} == {
        "subscription"
    }
    # One role on the container the two namespaces share, and no other storage role.
    storage = [r for r in roles if r.role_definition_id == STORAGE_BLOB_DATA_CONTRIBUTOR]
    assert storage == [
        RoleAssignment(
            namespace="stcontosocaptures",
            entity_type="container",
            entity="captures",
            role="contributor",
            role_definition_id=STORAGE_BLOB_DATA_CONTRIBUTOR,
        )
    ]
    assert [r for r in roles if r.entity_type == "container"] == storage


def test_the_capture_grants_nothing_broader() -> None:
    """No role on a captured topic itself (which would read its other subscriptions), none on
    the heartbeat topic, which holds no capture subscription, and every role on one of the
    entity scopes; the roles without the capture are the same minus the capture's own."""
    with_capture = role_assignments(_topology(_document()))
    document = _document()
    for namespace in document["namespaces"]:
        del namespace["capture"]
    without = role_assignments(_topology(document))
    added = set(with_capture) - set(without)
    assert set(without) <= set(with_capture)
    assert {(r.entity_type, r.subscription) for r in added} == {
        ("subscription", CAPTURE_SUBSCRIPTION),
        ("container", None),
    }
    assert not [r for r in with_capture if r.entity_type == "topic" and r.role == "receiver"]
    heartbeat = [r for r in with_capture if r.entity == "replication-heartbeat"]
    assert heartbeat, "heartbeats are on: the timer and readers hold roles on their topic"
    assert CAPTURE_SUBSCRIPTION not in {r.subscription for r in heartbeat}
    assert {r.entity_type for r in with_capture} <= set(ENTITY_TYPES)


def test_distinct_containers_get_one_role_each() -> None:
    document = _document()
    document["namespaces"][1]["capture"]["container"] = "neu-captures"
    storage = {
        (r.namespace, r.entity)
        for r in role_assignments(_topology(document))
        if r.entity_type == "container"
    }
    assert storage == {("stcontosocaptures", "captures"), ("stcontosocaptures", "neu-captures")}


def test_the_capture_storage_is_reached_with_the_apps_identity() -> None:
    topology = _topology(_document())
    credential, client_id = (
        f"{CAPTURE_STORAGE_SETTING}__credential",
        f"{CAPTURE_STORAGE_SETTING}__clientId",
    )
    system_assigned = app_settings(topology)
    assert system_assigned[credential] == "managedidentity"
    assert client_id not in system_assigned
    # Never a connection string or an account: each capture names its storage account.
    assert [k for k in system_assigned if k.startswith(CAPTURE_STORAGE_SETTING)] == [credential]
    user_assigned = app_settings(topology, identity_client_id=CLIENT_ID)
    assert (user_assigned[credential], user_assigned[client_id]) == ("managedidentity", CLIENT_ID)
    parameters = bicep_parameters(topology)["parameters"]
    assert parameters["replicationAppSettings"]["value"][credential] == "managedidentity"
    assert parameters["userAssignedIdentitySettings"]["value"][client_id] == "{identityClientId}"


def test_without_a_service_bus_capture_there_is_no_capture_storage_setting_or_role() -> None:
    document = _document()
    for namespace in document["namespaces"]:
        del namespace["capture"]
    topology = _topology(document)
    for settings in (
        app_settings(topology, identity_client_id=CLIENT_ID),
        bicep_parameters(topology)["parameters"]["userAssignedIdentitySettings"]["value"],
    ):
        assert not [key for key in settings if key.startswith(CAPTURE_STORAGE_SETTING)]
    assert not [r for r in role_assignments(topology) if r.entity_type == "container"]


def test_bicep_parameters_and_the_az_cli_script_carry_the_container_role() -> None:
    topology = _topology(_document())
    assignments = bicep_parameters(topology)["parameters"]["roleAssignments"]["value"]
    assert {
        "namespace": "stcontosocaptures",
        "entityType": "container",
        "entity": "captures",
        "role": "contributor",
        "roleDefinitionId": STORAGE_BLOB_DATA_CONTRIBUTOR,
    } in assignments
    script = az_cli_script(topology)
    (line,) = [line for line in script.splitlines() if STORAGE_BLOB_DATA_CONTRIBUTOR in line]
    # As bash splits it; the variables stay unexpanded (bash expands them when it runs).
    words = shlex.split(line)
    assert words[:5] == ["with_principal", "az", "role", "assignment", "create"]
    assert words[words.index("--scope") + 1] == (
        "/subscriptions/${SUBSCRIPTION_ID:-}/resourceGroups/$RESOURCE_GROUP/providers/"
        "Microsoft.Storage/storageAccounts/stcontosocaptures/blobServices/default/containers/"
        "captures"
    )
    assert words[words.index("--role") + 1] == STORAGE_BLOB_DATA_CONTRIBUTOR
    assert words[words.index("--assignee-principal-type") + 1] == "ServicePrincipal"

"""Connection resolution from app settings and the senders' grouping by partition key.

Token credentials are only constructed, never used: no network is needed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from azure.identity import DefaultAzureCredential, ManagedIdentityCredential

from replication.envelope import Envelope
from replication.exceptions import ConfigurationError
from replication.hosts.local import LocalHost
from replication.settings import Settings
from replication.topology import NamespaceSpec, load_topology
from replication.transport.connections import check_settings, resolve_access
from replication.transport.senders import group_in_order

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
EMULATOR = (
    "Endpoint=sb://localhost:5673;SharedAccessKeyName=RootManageSharedAccessKey;"
    "SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true;"
)


def _settings(environ: dict[str, str]) -> Settings:
    return Settings.from_environ(environ, connections=["SB_WEU", "SB_NEU"])


def _weu() -> NamespaceSpec:
    return load_topology(EXAMPLES / "two-region-all-active.json").namespace("weu")


def test_a_connection_string_setting_wins() -> None:
    access = resolve_access(_weu(), _settings({"SB_WEU": EMULATOR}))
    assert access.connection_string == EMULATOR


def test_identity_based_connection_uses_the_setting_host_and_client_id() -> None:
    access = resolve_access(
        _weu(),
        _settings(
            {
                "SB_WEU__fullyQualifiedNamespace": "other.servicebus.windows.net",
                "SB_WEU__clientId": "c",
            }
        ),
    )
    assert access.connection_string is None
    assert access.fully_qualified_namespace == "other.servicebus.windows.net"
    assert isinstance(access.credential, ManagedIdentityCredential)


def test_identity_based_connection_defaults_to_the_topology_host() -> None:
    access = resolve_access(_weu(), _settings({}))
    host, credential = access.token_access()
    assert host == "contoso-orders-weu.servicebus.windows.net"
    assert isinstance(credential, DefaultAzureCredential)


def test_credential_managedidentity_selects_the_apps_managed_identity() -> None:
    """``<prefix>__credential=managedidentity`` is what the Bicep renders for the triggers; the
    senders must use the same identity, not DefaultAzureCredential's chain."""
    access = resolve_access(_weu(), _settings({"SB_WEU__credential": "managedidentity"}))
    assert isinstance(access.credential, ManagedIdentityCredential)


def test_grouping_keeps_first_seen_group_order_and_member_order() -> None:
    envelopes = [
        Envelope(message_id=str(i), partition_key=key)
        for i, key in enumerate(["b", "a", "b", None, "a"])
    ]
    groups = group_in_order(envelopes, lambda e: e.partition_key)
    assert [(key, [e.message_id for e in members]) for key, members in groups] == [
        ("b", ["0", "2"]),
        ("a", ["1", "4"]),
        (None, ["3"]),
    ]


def test_a_malformed_connection_string_stops_the_local_host_at_start_naming_its_setting() -> None:
    topology = load_topology(EXAMPLES / "two-region-all-active.json")
    secret = "Endpoint=sb://weu.example/;SharedAccessKeyName=root;SharedAccessKey"
    environ = {"SB_WEU": secret, "SB_NEU": "not a connection string"}
    with pytest.raises(ConfigurationError) as caught:
        LocalHost(topology, environ)
    message = str(caught.value)
    assert message.startswith("app setting SB_WEU: not a valid servicebus connection string")
    assert message.endswith("malformed.")
    assert secret not in message  # the string, which may hold a key, is never echoed


def test_a_well_formed_emulator_connection_string_passes_the_start_check() -> None:
    topology = load_topology(EXAMPLES / "two-region-all-active.json")
    good = (
        "Endpoint=sb://localhost:5672;SharedAccessKeyName=RootManageSharedAccessKey;"
        "SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true;"
    )
    check_settings(topology.namespaces, _settings({"SB_WEU": good, "SB_NEU": good}))

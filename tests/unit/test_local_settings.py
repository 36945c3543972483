"""``local.settings.json`` beside the topology, read by the commands that connect
(:mod:`replication.cli._local_settings`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from replication.cli._local_settings import read_local_settings
from replication.exceptions import ConfigurationError


def write(folder: Path, document: object) -> Path:
    (folder / "topology.json").write_text("{}")
    (folder / "local.settings.json").write_text(json.dumps(document))
    return folder / "topology.json"


CONNECTIONS = ["SB_WEU", "SB_NEU", "SB_EUS"]


def test_connection_settings_fill_what_the_environment_leaves_unset_or_empty(
    tmp_path: Path,
) -> None:
    values = {
        "SB_WEU": "from-file",
        "SB_NEU": "from-file",
        "SB_EUS": "from-file",
        "SB_EUS__fullyQualifiedNamespace": "eus.servicebus.windows.net",
        "SB_EUSX": "another prefix",
        "AzureWebJobsStorage": "UseDevelopmentStorage=true",
    }
    topology = write(tmp_path, {"IsEncrypted": False, "Values": values})
    environ = {"SB_NEU": "exported", "SB_EUS": ""}
    added = read_local_settings(topology, CONNECTIONS, environ)
    assert added == ("SB_WEU", "SB_EUS", "SB_EUS__fullyQualifiedNamespace")
    assert environ == {
        "SB_WEU": "from-file",
        "SB_NEU": "exported",
        "SB_EUS": "from-file",
        "SB_EUS__fullyQualifiedNamespace": "eus.servicebus.windows.net",
    }


def test_a_namespace_the_environment_configures_takes_nothing_from_the_file(
    tmp_path: Path,
) -> None:
    """Entra ID exported for a real namespace (``__fullyQualifiedNamespace``) beside a file an
    emulator left: the file's connection string would win over the identity, and point the
    command at a stopped emulator."""
    values = {"SB_WEU": "Endpoint=sb://localhost:5672;...", "SB_NEU": "from-file"}
    topology = write(tmp_path, {"Values": values})
    environ = {"SB_WEU__fullyQualifiedNamespace": "contoso-weu.servicebus.windows.net"}
    assert read_local_settings(topology, CONNECTIONS, environ) == ("SB_NEU",)
    assert environ == {
        "SB_WEU__fullyQualifiedNamespace": "contoso-weu.servicebus.windows.net",
        "SB_NEU": "from-file",
    }


def test_no_file_beside_the_topology_changes_nothing(tmp_path: Path) -> None:
    environ = {"SB_WEU": "exported"}
    assert read_local_settings(tmp_path / "topology.json", CONNECTIONS, environ) == ()
    assert environ == {"SB_WEU": "exported"}


def test_settings_of_other_prefixes_are_not_read_or_judged(tmp_path: Path) -> None:
    """A value ``func start`` would refuse is its business, not a reason to stop ``run``."""
    environ: dict[str, str] = {}
    topology = write(tmp_path, {"Values": {"FUNCTIONS_WORKER_PROCESS_COUNT": 2, "SB_WEU": "x"}})
    assert read_local_settings(topology, CONNECTIONS, environ) == ("SB_WEU",)
    assert environ == {"SB_WEU": "x"}


def test_a_file_without_values_changes_nothing(tmp_path: Path) -> None:
    environ: dict[str, str] = {}
    assert (
        read_local_settings(write(tmp_path, {"IsEncrypted": False}), CONNECTIONS, environ)
        is not None
    )
    assert environ == {}


def test_a_file_that_is_not_json_is_named_with_its_line(tmp_path: Path) -> None:
    (tmp_path / "local.settings.json").write_text('{"Values": {"SB_WEU": }')
    with pytest.raises(ConfigurationError) as raised:
        read_local_settings(tmp_path / "topology.json", CONNECTIONS, {})
    assert str(raised.value) == (
        f"{tmp_path / 'local.settings.json'}: not JSON: Expecting value (line 1, column 23)"
    )


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"Values": ["SB_WEU"]}, "$.Values: must be an object"),
        (["Values"], "$: must be an object"),
        ({"Values": {"SB_WEU": 1}}, "$.Values.SB_WEU: must be a string, got int"),
    ],
)
def test_values_that_are_not_settings_are_named_by_json_path(
    tmp_path: Path, document: object, message: str
) -> None:
    environ: dict[str, str] = {}
    with pytest.raises(ConfigurationError) as raised:
        read_local_settings(write(tmp_path, document), CONNECTIONS, environ)
    assert str(raised.value) == f"{tmp_path / 'local.settings.json'}: {message}"
    assert environ == {}

"""``replication init``'s pure parts: how the library's requirement is written for each way it
was installed, and what the azd hook it copies says when the topology is missing (the packaging
tier runs ``init`` itself from a clean environment)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from replication import __version__
from replication.exceptions import ConfigurationError
from replication.layout import INFRA
from replication.scaffold import create_app, example_names
from replication.scaffold._requirement import (
    _checked_wheel,
    _local_folder,
    _local_wheel,
    _vcs_url,
)


def test_a_vcs_install_is_named_by_its_url_at_the_installed_commit() -> None:
    direct = {
        "url": "https://github.com/contoso/azure-messaging-replication.git",
        "vcs_info": {"vcs": "git", "commit_id": "0123abc"},
    }
    assert _vcs_url(direct) == (
        "git+https://github.com/contoso/azure-messaging-replication.git@0123abc"
    )
    assert _vcs_url({"url": "file:///x.whl", "archive_info": {}}) is None
    assert _vcs_url(None) is None


def test_a_wheel_install_is_copied_and_a_deleted_wheel_is_asked_for(tmp_path: Path) -> None:
    """A wheel that is gone cannot be vendored; naming the package index instead would write a
    requirement that fails where the index does not hold this version."""
    wheel = tmp_path / f"azure_messaging_replication-{__version__}-py3-none-any.whl"
    direct = {"url": wheel.as_uri(), "archive_info": {}}
    with pytest.raises(ConfigurationError) as raised:
        _local_wheel(direct)
    assert str(raised.value) == (
        f"this library was installed from {wheel}, which is no longer there: give a wheel of "
        f"version {__version__} with --wheel FILE, which requirements.txt then names (the "
        "package index may not hold it)"
    )
    wheel.write_bytes(b"")
    assert _local_wheel(direct) == wheel
    assert _local_wheel({"url": "https://example.invalid/x.whl"}) is None


@pytest.mark.parametrize("existed", [False, True], ids=["new folder", "empty folder"])
def test_init_that_fails_leaves_the_folder_as_it_found_it(tmp_path: Path, existed: bool) -> None:
    """A wheel that is not this library's is found after the topology was written: nothing of
    it stays behind, so the next ``init`` into the same folder is not refused as "not empty"."""
    folder = tmp_path / "app"
    if existed:
        folder.mkdir()
    other = tmp_path / "other-1.0-py3-none-any.whl"
    other.write_bytes(b"")
    with pytest.raises(ConfigurationError):
        create_app(folder, wheel=other)
    assert (list(folder.iterdir()) == []) if existed else not folder.exists()


def test_a_folder_install_is_found_only_while_it_holds_the_project(tmp_path: Path) -> None:
    """``pip install .`` (or ``-e .``) records the folder: ``init`` builds a wheel from it,
    since a requirement naming the folder would resolve on this machine only."""
    direct = {"url": tmp_path.as_uri(), "dir_info": {}}
    assert _local_folder(direct) is None
    (tmp_path / "pyproject.toml").write_text("[project]\n")
    assert _local_folder(direct) == tmp_path
    assert _local_folder({"url": tmp_path.as_uri(), "dir_info": {"editable": True}}) == tmp_path
    assert _local_folder({"url": tmp_path.as_uri(), "archive_info": {}}) is None
    assert _local_folder({"url": "https://example.invalid/project", "dir_info": {}}) is None
    assert _local_folder(None) is None


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("other-1.0-py3-none-any.whl", "not a wheel of azure-messaging-replication"),
        ("azure_messaging_replication-0.0.1-py3-none-any.whl", "is not version"),
    ],
)
def test_a_wheel_given_by_hand_must_be_this_librarys(tmp_path: Path, name: str, says: str) -> None:
    wheel = tmp_path / name
    wheel.write_bytes(b"")
    with pytest.raises(ConfigurationError, match=says):
        _checked_wheel(wheel)


def test_init_names_the_examples_it_knows_and_writes_nothing_on_a_bad_one(tmp_path: Path) -> None:
    assert {"two-region-all-active", "active-passive-failover"} <= set(example_names())
    with pytest.raises(ConfigurationError, match="no example named 'nope'; choose one of"):
        create_app(tmp_path / "app", example="nope")
    assert not (tmp_path / "app").exists()


@pytest.mark.parametrize(
    ("layout", "line"),
    [
        (
            "init-app",
            "error: prod.json not found: write one, or start from an example: `replication init "
            "DIR --example NAME` writes DIR/topology.json (`replication init --help` lists the "
            "examples)",
        ),
        (
            "repository",
            "error: prod.json not found: copy one of examples/*.json to prod.json and edit it",
        ),
    ],
)
def test_the_azd_hook_says_where_a_missing_topology_comes_from(
    tmp_path: Path, layout: str, line: str
) -> None:
    """The hook as ``init`` copies it (the repository's own ``infra/scripts``): an app made by
    ``init`` has no ``examples/`` to copy from, the repository has."""
    script = tmp_path / "infra" / "scripts" / "render-parameters.sh"
    script.parent.mkdir(parents=True)
    shutil.copy2(INFRA.folder() / "scripts" / "render-parameters.sh", script)
    if layout == "repository":
        (tmp_path / "examples").mkdir()
    result = subprocess.run(
        ["sh", str(script)],
        env={**os.environ, "REPLICATION_TOPOLOGY": "prod.json"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (result.returncode, result.stderr, result.stdout) == (1, line + "\n", "")

"""The documentation's code blocks run (``blocks.py`` says which and how), so the examples
cannot rot: Python blocks in one namespace per page, in page order; bash blocks with
``replication`` on the ``PATH`` (this checkout's, as ``python -m replication``) from the
repository's root. A block followed by a ``text`` block prints that output.

Blocks marked ``<!-- test: emulator -->`` run with the local emulator serving
``examples/two-region-all-active.json`` (the tutorial's topology) and its tasks replicating in
this process, their connection settings in the environment. Bash blocks marked ``<!-- test: app
-->`` run in their page's shell folder (:data:`SHELL_FOLDERS`): at first an app made by
``replication init --example two-region-all-active`` in a temporary folder (what the how-to
pages assume), then wherever the page's previous ``app`` block left its shell (``cd``)."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .blocks import ROOT, Block, blocks, matches, pages

BLOCKS = [block for page in pages() for block in blocks(page)]
RUNS = [block for block in BLOCKS if block.language in ("python", "bash")]
NAMESPACES: dict[str, dict[str, Any]] = {}
"""Each page's Python namespace: a page's blocks build on each other."""
SHELL_FOLDERS: dict[str, Path] = {}
"""Each page's shell folder for its ``app`` blocks: where the previous one ended."""


@pytest.fixture(scope="module")
def shims(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with a ``replication`` command that runs this checkout's CLI."""
    folder = tmp_path_factory.mktemp("bin")
    command = folder / "replication"
    command.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m replication "$@"\n')
    command.chmod(0o755)
    return folder


@pytest.fixture(scope="module")
def first_app(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where a page's ``app`` blocks start: a new app of the tutorial's example topology."""
    folder = tmp_path_factory.mktemp("shell") / "app"
    subprocess.run(
        [sys.executable, "-m", "replication", "init", str(folder),
         "--example", "two-region-all-active"],
        cwd=ROOT, check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    return folder


@pytest.fixture(scope="module")
def emulator_settings() -> Iterator[dict[str, str]]:
    """The tutorial's namespaces on the emulator, its tasks running; their settings."""
    import emulator
    from replication.hosts.local import LocalHost
    from replication.render import emulator_config
    from replication.topology import load_topology

    topology = load_topology(ROOT / "examples" / "two-region-all-active.json")
    with emulator.run_emulator(emulator_config(topology)) as running:
        settings = {ns.connection: running.connection_string(ns.name) for ns in topology.namespaces}
        with LocalHost(topology, environ={**os.environ, **settings}):
            yield settings


def test_every_page_has_been_read() -> None:
    assert RUNS, "no runnable block found"
    assert all(block.skip is None or block.skip.strip() for block in BLOCKS)


@pytest.mark.parametrize("block", RUNS, ids=lambda block: block.id)
def test_the_block_runs(
    block: Block,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    shims: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    if block.skip is not None:
        pytest.skip(block.skip)
    settings: dict[str, str] = {}
    if "emulator" in block.needs:
        settings = request.getfixturevalue("emulator_settings")
    for name, value in settings.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(ROOT)
    if block.language == "python":
        output = io.StringIO()
        namespace = NAMESPACES.setdefault(block.page, {"__name__": "__docs__"})
        with contextlib.redirect_stdout(output):
            exec(compile(block.code, block.id, "exec"), namespace)
        printed = output.getvalue()
    else:
        environment = {
            **os.environ,
            "PATH": f"{shims}{os.pathsep}{os.environ['PATH']}",
            "PYTHONPATH": str(ROOT),
        }
        folder, code = ROOT, block.code
        if "app" in block.needs:
            folder = SHELL_FOLDERS.setdefault(block.page, request.getfixturevalue("first_app"))
            ended = tmp_path_factory.mktemp("pwd") / "pwd"
            code = f'{code}\npwd > "{ended}"\n'
        result = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", code],
            cwd=folder,
            env=environment,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}{result.stderr}"
        printed = result.stdout
        if "app" in block.needs:
            SHELL_FOLDERS[block.page] = Path(ended.read_text().strip())
    if block.expected is not None:
        assert matches(printed, block.expected), f"printed:\n{printed}\nexpected:\n{block.expected}"

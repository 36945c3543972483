"""Starting the emulator as a process fails promptly and says why, whatever goes wrong.

The "emulator" here is a stand-in script (the real one needs python-qpid-proton, which unit
tests do not): one that hangs without printing, one that exits with an error.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from replication.hosts.local import EmulatorProcess, EmulatorStartError, emulator_process


def _script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "fake-python"
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


def test_an_emulator_that_prints_nothing_fails_the_start_at_the_deadline(tmp_path: Path) -> None:
    hanging = _script(tmp_path, "sleep 60")
    started = time.monotonic()
    with (
        pytest.raises(EmulatorStartError, match="did not start"),
        emulator_process("topology.json", python=hanging, startup_timeout=1.0),
    ):
        pass
    assert time.monotonic() - started < 30


def test_an_emulator_that_exits_reports_its_error(tmp_path: Path) -> None:
    failing = _script(tmp_path, "echo 'error: no such topology' >&2; exit 2")
    with (
        pytest.raises(EmulatorStartError, match="error: no such topology"),
        emulator_process("topology.json", python=failing),
    ):
        pass


def test_settings_printed_in_one_write_are_all_read(tmp_path: Path) -> None:
    printing = _script(
        tmp_path,
        "printf \"export A='1'\\nexport B='2'\\n# emulator running\\n\"; sleep 60",
    )
    with emulator_process("topology.json", python=printing, startup_timeout=10.0) as settings:
        assert settings == {"A": "1", "B": "2"}


def test_a_config_emulator_starts_again_on_the_ports_it_chose_first(tmp_path: Path) -> None:
    connection = "Endpoint=sb://localhost:5999;SharedAccessKeyName=RootManageSharedAccessKey"
    fake = _script(
        tmp_path,
        f'echo "$@" >> "{tmp_path}/arguments"; '
        f'printf "weu\\t{connection}\\n# emulator running\\n"; sleep 60',
    )
    workdir = tmp_path / "work"
    process = EmulatorProcess(
        {"UserConfig": {"Namespaces": [{"Name": "weu"}]}},
        workdir,
        data_dir=workdir / "data",
        python=fake,
        startup_timeout=10.0,
    )
    assert process.start() == {"weu": connection}
    process.kill()
    assert process.start() == {"weu": connection}
    process.stop()
    written = json.loads((workdir / "emulator-config.json").read_text())
    assert written["UserConfig"]["Namespaces"] == [{"Name": "weu", "Port": 5999}]
    expected = f"-m emulator --config {workdir}/emulator-config.json --data-dir {workdir}/data"
    assert (tmp_path / "arguments").read_text().splitlines() == [expected, expected]

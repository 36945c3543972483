"""Error messages that teach (issue 39): for each, the exact input, the one line the command
prints and its exit code.

- a duration that is not ISO-8601 names the JSON path and says what is expected (ISO-8601
  text or a number of seconds);
- a misspelt option names itself, the closest known option and every known one (not a missing
  ``replicaTimeToLive``);
- a count or a time that cannot be meant is refused before anything runs;
- a flag the chosen command does not know is reported with that command's usage;
- a missing positional is named by its choices (``render``'s), not by its attribute name.

(The unset connection setting, named before the Entra ID fallback is tried, connects and is in
``tests/e2e/test_connection_settings.py``.)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from replication.cli import main
from replication.exit_codes import ExitCode

ROOT = Path(__file__).resolve().parents[2]
ACTIVE_PASSIVE = ROOT / "examples" / "active-passive.json"
TWO_REGIONS = ROOT / "examples" / "two-region-all-active.json"


def _topology(tmp_path: Path, example: Path, edit: dict[str, Any]) -> Path:
    """``example`` with ``edit`` applied: {"a.b": value} sets document["a"]["b"] (list
    indices as numbers)."""
    document = json.loads(example.read_text(encoding="utf-8"))
    for dotted, value in edit.items():
        *parents, last = [int(p) if p.isdigit() else p for p in dotted.split(".")]
        node = document
        for part in parents:
            node = node.setdefault(part, {}) if isinstance(part, str) else node[part]
        node[last] = value
    path = tmp_path / "topology.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def _validate(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["validate", "--topology", str(path)])
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return code, err.rstrip("\n")


@pytest.mark.parametrize(
    ("edit", "line"),
    [
        (
            {"tasks.0.options": {"replicaTimeToLive": "2 minutes"}},
            "tasks[0].options.replicaTimeToLive: expected an ISO-8601 duration such as PT2M or "
            "P1D, or a number of seconds, got '2 minutes'",
        ),
        (
            {"tasks.0.retry": {"maxBackoff": "10s"}},
            "tasks[0].retry.maxBackoff: expected an ISO-8601 duration such as PT2M or P1D, "
            "or a number of seconds, got '10s'",
        ),
        (
            {"monitoring": {"lagThreshold": "1h"}},
            "monitoring.lagThreshold: expected an ISO-8601 duration such as PT2M or P1D, or a "
            "number of seconds, got '1h'",
        ),
        (
            {"heartbeats": {"enabled": True, "interval": "P1M"}},
            "heartbeats.interval: expected an ISO-8601 duration such as PT2M or P1D, or a number "
            "of seconds, got 'P1M': years and months have no fixed length",
        ),
        (
            {"namespaces.0.topics.0.subscriptions.0.lockDuration": True},
            "namespaces[0].topics[0].subscriptions[0].lockDuration: expected an ISO-8601 "
            "duration such as PT2M or P1D, or a number of seconds, got True",
        ),
    ],
    ids=["option", "retry", "monitoring", "calendar-months", "not-text"],
)
def test_a_duration_that_is_not_iso8601_says_what_is_expected_with_its_json_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: dict[str, Any], line: str
) -> None:
    path = _topology(tmp_path, ACTIVE_PASSIVE, edit)
    assert _validate(path, capsys) == (ExitCode.CONFIGURATION, f"error: {path}: {line}")


def test_numbers_of_seconds_and_iso8601_durations_still_load(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _topology(
        tmp_path,
        ACTIVE_PASSIVE,
        {"tasks.0.options": {"replicaTimeToLive": 90}, "tasks.0.retry": {"maxBackoff": "PT0.5S"}},
    )
    assert main(["validate", "--topology", str(path)]) == ExitCode.OK


@pytest.mark.parametrize(
    ("example", "edit", "line"),
    [
        (
            ACTIVE_PASSIVE,
            {"tasks.0.options": {"replicaTimeToLife": "PT2M"}},
            "tasks[0].options.replicaTimeToLife: unknown option for pattern 'active_passive' "
            "(did you mean 'replicaTimeToLive'?); known: replicaTimeToLive",
        ),
        (
            ROOT / "examples" / "validation.json",
            {"tasks.0.options.maxBodyByte": 1024},
            "tasks[0].options.maxBodyByte: unknown option for pattern 'validation' (did you "
            "mean 'maxBodyBytes'?); known: bodyModel, bodySchema, condition, maxBodyBytes, "
            "onInvalid, removeProperties, requiredProperties, setProperties",
        ),
        (
            ROOT / "examples" / "routing.json",
            {"tasks.0.options.routes.0.condtion": "1 = 1"},
            "tasks[0].options.routes[0].condtion: unknown option for pattern 'routing' (did you "
            "mean 'condition'?); known: condition, targets",
        ),
        (
            TWO_REGIONS,
            {"tasks.0.retry": {"outageTolerence": "PT1H"}},
            "tasks[0].retry.outageTolerence: unknown key (did you mean 'outageTolerance'?); "
            "known: maxBackoff, minBackoff, outageTolerance",
        ),
        (
            TWO_REGIONS,
            {"monitoring": {"colour": "blue"}},
            "monitoring.colour: unknown key; known: actionGroupEmails, alertsEnabled, "
            "failureWindow, heartbeatMaxAge, lagThreshold, parkedThreshold",
        ),
    ],
    ids=["required-option", "optional-option", "nested-option", "topology-key", "no-close-key"],
)
def test_a_misspelt_key_is_named_with_the_closest_and_every_known_key(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    example: Path,
    edit: dict[str, Any],
    line: str,
) -> None:
    path = _topology(tmp_path, example, edit)
    assert _validate(path, capsys) == (ExitCode.CONFIGURATION, f"error: {path}: {line}")


FAILOVER = ["--topology", str(TWO_REGIONS), "--app", "orders", "--to", "neu"]


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["plan", "--messages", "-1"], "argument --messages: must be 1 or more, got -1"),
        (["plan", "--messages", "0"], "argument --messages: must be 1 or more, got 0"),
        (["plan", "--messages", "ten"], "argument --messages: expected a whole number, got 'ten'"),
        (["demo", "--messages", "-1"], "argument --messages: must be 1 or more, got -1"),
        (["demo", "--parallel", "0"], "argument --parallel: must be 1 or more, got 0"),
        (["demo", "--timeout", "-3"], "argument --timeout: must be more than 0 seconds, got -3"),
        (["status", "--cap", "-5"], "argument --cap: must be 1 or more, got -5"),
        (["redrive", "--task", "t", "--max", "0"], "argument --max: must be 1 or more, got 0"),
        (
            ["run", "--until-idle", "-1"],
            "argument --until-idle: must be more than 0 seconds, got -1",
        ),
        (
            ["run", "--timeout", "nan"],
            "argument --timeout: expected a number of seconds, got 'nan'",
        ),
        (
            ["failover", *FAILOVER, "--settle", "-1"],
            "argument --settle: must be 0 seconds or more, got -1",
        ),
        (
            ["failback", *FAILOVER, "--timeout", "0"],
            "argument --timeout: must be more than 0 seconds, got 0",
        ),
    ],
    ids=lambda value: "-".join(value) if isinstance(value, list) else None,
)
def test_a_count_or_time_that_cannot_be_meant_is_refused_before_anything_runs(
    capsys: pytest.CaptureFixture[str], argv: list[str], line: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == ExitCode.CONFIGURATION
    err = capsys.readouterr().err
    assert err.startswith(f"usage: replication {argv[0]} ")
    assert err.splitlines()[-1] == f"replication {argv[0]}: error: {line}"


def test_an_unknown_flag_is_reported_with_the_commands_own_usage(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "120")  # argparse wraps the usage to the terminal's width
    with pytest.raises(SystemExit) as exited:
        main(["validate", "--topology", str(TWO_REGIONS), "--bogus"])
    assert exited.value.code == ExitCode.CONFIGURATION
    err = capsys.readouterr().err
    assert err.splitlines()[0] == (
        "usage: replication validate [-h] [-v] [--topology TOPOLOGY] [--transforms MODULE:NAME]"
    )
    assert err.splitlines()[-1] == "replication validate: error: unrecognized arguments: --bogus"


def test_a_missing_render_target_is_named_by_its_choices(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "120")  # argparse wraps the usage to the terminal's width
    with pytest.raises(SystemExit) as exited:
        main(["render"])
    assert exited.value.code == ExitCode.CONFIGURATION
    err = capsys.readouterr().err
    targets = "{emulator-config,az-cli,bicep-params,app-settings}"
    assert err.splitlines()[-2].strip() == targets  # the usage's last line
    assert err.splitlines()[-1] == (
        f"replication render: error: the following arguments are required: {targets}"
    )


@pytest.mark.parametrize(
    ("name", "line"),
    [
        (
            "two-region-all-active.json",
            "error: examples/two-region-all-active.json: topology file not found; "
            "'two-region-all-active' is a bundled example: `replication init DIR --example "
            "two-region-all-active` makes an app from it",
        ),
        (
            "orders.json",
            "error: examples/orders.json: topology file not found (set REPLICATION_TOPOLOGY or "
            "pass --topology; `replication init DIR` makes an app with one)",
        ),
    ],
)
def test_a_topology_file_that_is_not_there_says_how_to_get_one(
    name: str,
    line: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What a user who installed the package meets following a checkout's ``examples/``
    path: the examples are inside the package, and ``init`` copies them out."""
    monkeypatch.chdir(tmp_path)
    assert _validate(Path("examples") / name, capsys) == (ExitCode.CONFIGURATION, line)


def test_demo_takes_transforms_only_for_a_topology_of_its_own(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``demo --topology FILE --transforms MODULE:NAME`` loads an app's registered transforms as
    ``run`` does; the showcase registers its own, so there the option would mean nothing."""
    assert main(["demo", "--transforms", "app_transforms:transforms"]) == ExitCode.CONFIGURATION
    assert capsys.readouterr().err == (
        "error: arguments: --transforms needs --topology: the showcase registers its own\n"
    )

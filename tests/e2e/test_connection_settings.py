"""A namespace whose connection setting is unset is named before the Entra ID fallback is tried
(issue 39): ``status`` and ``run`` print one ``note:`` line naming the setting, the namespace
and the host they will try, then go on and report the namespace unreachable (exit 3). A setting
in the ``local.settings.json`` beside the topology counts as set, as ``func start`` reads it; and
``run --until-idle`` stopped by Ctrl-C exits 130.

The namespaces' host names end in ``.invalid`` (RFC 6761: never resolves), so the SDKs fail on
the name before any credential is asked for a token: no request leaves the machine. In the
emulator tier because the SDKs' connection attempts and retries take seconds of waiting.
"""

from __future__ import annotations

import json
import signal
import threading
from pathlib import Path

import pytest

from replication.cli import main
from replication.exit_codes import ExitCode

pytestmark = pytest.mark.emulator

ROOT = Path(__file__).resolve().parents[2]

NOTE = (
    "note: app setting SB_WEU is not set (namespace 'weu'): connecting to weu.invalid with "
    "Microsoft Entra ID (DefaultAzureCredential); set SB_WEU to a connection string, or "
    "SB_WEU__fullyQualifiedNamespace to use Entra ID on purpose"
)


@pytest.fixture
def topology(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The two-region example on ``.invalid`` hosts; ``SB_NEU`` set, ``SB_WEU`` not."""
    document = json.loads((ROOT / "examples" / "two-region-all-active.json").read_text())
    for namespace in document["namespaces"]:
        namespace["fullyQualifiedNamespace"] = f"{namespace['name']}.invalid"
    path = tmp_path / "topology.json"
    path.write_text(json.dumps(document))
    for name in ("SB_WEU", "SB_WEU__fullyQualifiedNamespace", "SB_WEU__credential"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(
        "SB_NEU", "Endpoint=sb://neu.invalid;SharedAccessKeyName=k;SharedAccessKey=c2VjcmV0"
    )
    return path


def test_status_names_the_unset_setting_before_trying_entra_id(
    topology: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["status", "--topology", str(topology)]) == ExitCode.UNAVAILABLE
    err = capsys.readouterr().err
    assert err.splitlines() == [NOTE]


def test_run_names_the_unset_setting_before_trying_entra_id(
    topology: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", "--topology", str(topology), "--until-idle", "1", "--timeout", "30"]
    assert main(argv) == ExitCode.UNAVAILABLE
    captured = capsys.readouterr()
    assert captured.err.splitlines()[0] == NOTE
    assert captured.out.splitlines()[0] == "running 2 task(s); Ctrl-C to stop"


def test_nothing_is_noted_when_identity_is_chosen_on_purpose(
    topology: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SB_WEU__fullyQualifiedNamespace", "weu.invalid")
    assert main(["status", "--topology", str(topology)]) == ExitCode.UNAVAILABLE
    assert capsys.readouterr().err == ""


def test_a_setting_in_local_settings_json_beside_the_topology_is_read_as_func_start_reads_it(
    topology: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What ``replication emulator --local-settings`` wrote, without exporting it."""
    monkeypatch.setenv("SB_WEU", "")  # empty is unset; monkeypatch restores what the file sets
    connection = "Endpoint=sb://weu.invalid;SharedAccessKeyName=k;SharedAccessKey=c2VjcmV0"
    (topology.parent / "local.settings.json").write_text(
        json.dumps({"IsEncrypted": False, "Values": {"SB_WEU": connection}})
    )
    assert main(["status", "--topology", str(topology)]) == ExitCode.UNAVAILABLE
    assert capsys.readouterr().err == (
        f"note: SB_WEU from {topology.parent / 'local.settings.json'} (not set in the "
        "environment)\n"
    )


def test_ctrl_c_before_the_idle_it_waits_for_exits_130(
    topology: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``run --until-idle`` stopped early did not finish; ``run`` alone finishes by being
    stopped (exit 0, :class:`~replication.exit_codes.ExitCode`)."""
    interrupt = threading.Timer(3.0, signal.raise_signal, [signal.SIGINT])
    interrupt.start()
    try:
        argv = ["run", "--topology", str(topology), "--until-idle", "60", "--timeout", "120"]
        assert main(argv) == ExitCode.INTERRUPTED
    finally:
        interrupt.cancel()
    assert capsys.readouterr().out.splitlines()[0] == "running 2 task(s); Ctrl-C to stop"

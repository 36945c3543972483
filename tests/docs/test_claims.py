"""What the README and the docs claim, checked against the code (issue 39 found three claims
false): that the emulator supports sessions, which commands import the app's code, and what the
wheel contains."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from replication.cli import main
from replication.exit_codes import ExitCode
from replication.layout import AUDIT, EMULATOR, EXAMPLES, INFRA, PATTERNS

from .blocks import DOCS, ROOT

PAGES = {
    "README.md": ROOT / "README.md",
    "emulator/README.md": ROOT / "emulator" / "README.md",
    **{f"docs/{p.relative_to(DOCS)}": p for p in sorted(DOCS.rglob("*.md"))},
}


def _text(path: Path) -> str:
    return " ".join(path.read_text(encoding="utf-8").split())


# -- sessions ---------------------------------------------------------------------------------


def test_no_page_says_the_emulator_lacks_sessions() -> None:
    denial = re.compile(
        r"sessions are not\b|(does not|doesn't) support sessions|no sessions|sessions: no\b", re.I
    )
    for name, path in PAGES.items():
        assert not denial.search(_text(path)), f"{name} says the emulator has no sessions"
    assert "sessions" in _text(ROOT / "docs" / "index.md")
    assert "sessions" in _text(ROOT / "README.md").lower()


def test_the_emulator_serves_sessions_to_the_sdk() -> None:
    """The claim, checked: a session-enabled queue of the emulator gives the SDK's session
    receiver its session's messages in order."""
    from azure.servicebus import ServiceBusClient, ServiceBusMessage

    import emulator

    config = {
        "UserConfig": {
            "Namespaces": [
                {"Name": "weu", "Queues": [{"Name": "q", "Properties": {"RequiresSession": True}}]}
            ]
        }
    }
    with (
        emulator.run_emulator(config) as running,
        ServiceBusClient.from_connection_string(running.connection_string("weu")) as client,
    ):
        with client.get_queue_sender("q") as sender:
            sender.send_messages([ServiceBusMessage(f"m{i}", session_id="s-1") for i in range(3)])
        with client.get_queue_receiver("q", session_id="s-1", max_wait_time=5) as receiver:
            received = receiver.receive_messages(max_message_count=3, max_wait_time=5)
            assert [str(m) for m in received] == ["m0", "m1", "m2"]
            assert receiver.session.session_id == "s-1"
            for message in received:
                receiver.complete_message(message)


# -- what imports the app's code --------------------------------------------------------------

CLAIM = (
    "`render`, `status`, `lint-rules` and `replication emulator` read the topology's entities "
    "only and import none of it, neither transforms nor a `bodyModel`"
)


@pytest.fixture
def sentinel_topology(tmp_path: Path) -> tuple[Path, Path]:
    """A topology whose transform and bodyModel name a module that, when imported, writes a
    file; the file and the topology."""
    imported = tmp_path / "imported"
    # A name of its own: every test's folder stays on sys.path once a topology was loaded there.
    module = f"sentinel_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{module}.py").write_text(
        "import pathlib\n"
        f"pathlib.Path({str(imported)!r}).write_text('imported')\n"
        "from pydantic import BaseModel\n"
        "class Order(BaseModel):\n    amount: int\n"
        "def stamp(message):\n    return message\n"
    )
    document = json.loads((ROOT / "examples" / "validation.json").read_text(encoding="utf-8"))
    document.pop("$schema")
    for namespace in document["namespaces"]:
        namespace["fullyQualifiedNamespace"] = f"{namespace['name']}.invalid"
    task = document["tasks"][0]
    task["transform"] = f"{module}:stamp"
    task["options"]["bodyModel"] = f"{module}:Order"
    path = tmp_path / "topology.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return imported, path


def test_the_docs_say_which_commands_import_the_apps_code() -> None:
    assert CLAIM in _text(DOCS / "how-to" / "transforms.md")


@pytest.mark.parametrize(
    "argv",
    [
        ["render", "bicep-params"],
        ["render", "emulator-config"],
        ["lint-rules"],
        ["status"],
    ],
    ids=" ".join,
)
def test_commands_that_read_entities_import_none_of_the_apps_code(
    sentinel_topology: tuple[Path, Path],
    argv: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    imported, path = sentinel_topology
    monkeypatch.chdir(path.parent.parent)  # the module sits beside the topology, not here
    for namespace in ("SB_WEU", "SB_NEU"):
        monkeypatch.setenv(namespace, f"Endpoint=sb://{namespace.lower()}.invalid;"
                           "SharedAccessKeyName=k;SharedAccessKey=c2VjcmV0")  # fmt: skip
    code = main([*argv, "--topology", str(path)])
    # status reaches no namespace here (.invalid hosts): it reports them unreachable.
    assert code == (ExitCode.UNAVAILABLE if argv == ["status"] else ExitCode.OK)
    assert not imported.exists(), f"{' '.join(argv)} imported the app's module"


def test_the_emulator_reads_entities_only(sentinel_topology: tuple[Path, Path]) -> None:
    from emulator._cli import _config_from_topology

    imported, path = sentinel_topology
    config, _ = _config_from_topology(str(path))
    assert config["UserConfig"]["Namespaces"]
    assert not imported.exists()


def test_validate_does_import_it(
    sentinel_topology: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """The control: the sentinel works."""
    imported, path = sentinel_topology
    assert main(["validate", "--topology", str(path)]) == ExitCode.OK
    assert imported.exists()


# -- what the wheel contains ------------------------------------------------------------------


def _setup_mapping() -> dict[str, str]:
    """setup.py's ``MAPPED``: installed package -> repository folder."""
    tree = ast.parse((ROOT / "setup.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "MAPPED":
            mapping: dict[str, str] = ast.literal_eval(node.value)
            return mapping
    raise AssertionError("setup.py has no MAPPED")


def _documented_mapping() -> dict[str, str]:
    """The deploy guide's table "What the package installs": installed package -> folder."""
    text = (DOCS / "how-to" / "deploy.md").read_text(encoding="utf-8")
    section = text.split("## What the package installs", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(\w+)/` \| `([\w.]+)` \|$", section, flags=re.MULTILINE)
    return {installed: folder for folder, installed in rows}


def test_the_docs_list_what_the_wheel_installs() -> None:
    documented = _documented_mapping()
    assert documented == _setup_mapping()
    bundled = {
        part.installed: part.folder_name for part in (PATTERNS, EMULATOR, AUDIT, EXAMPLES, INFRA)
    }
    assert documented == bundled
    readme = _text(ROOT / "README.md")
    for installed in documented:
        assert f"`{installed}`" in readme, f"README does not say the wheel holds {installed}"

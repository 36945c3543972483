"""An app of your own, as a user makes it: ``replication init`` from the installed wheel, outside
the repository, then every step of the road to production that runs on this machine.

What cannot run here, and what stands in for it:

- ``azd up`` (no Azure): its preprovision hook, ``infra/scripts/render-parameters.sh``, runs as
  azd runs it (``sh``, from the app's folder) with the app's environment;
- the Functions remote build (no Azure): ``pip install -r requirements.txt --target`` into an
  empty folder, as Oryx's Python build does for a Function app, and the app indexed from there;
- ``func start`` (no Core Tools): the app runs through the real Python worker in the host tier
  (``tests/host/test_user_app.py`` scaffolds its app with ``replication init`` too), and
  ``replication run`` replicates on the emulator here, from the wheel.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from azure.servicebus import ServiceBusClient, ServiceBusMessage

from replication.properties import REPL_ORIGIN
from tests.package.conftest import ROOT, Dist, Environments, clean_environ, constraints, run

READY = "# emulator running; Ctrl-C stops it"


def _text(value: object) -> object:
    return value.decode() if isinstance(value, bytes) else value


@pytest.fixture(scope="module")
def app(environments: Environments, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``replication init`` of the default example, by the wheel alone (no extras)."""
    folder = tmp_path_factory.mktemp("apps") / "contoso-replication"
    created = run(["replication", "init", folder], cwd=folder.parent, venv=environments.bare)
    assert created.returncode == 0, created.stderr
    assert "the wheel pip installed this library from" in created.stdout
    return folder


def test_init_writes_every_file_of_an_app(app: Path, dist: Dist) -> None:
    files = {p.relative_to(app).as_posix() for p in app.rglob("*") if p.is_file()}
    assert {
        "function_app.py", "app_transforms.py", "topology.json", "requirements.txt",
        "host.json", ".funcignore", ".gitignore", "local.settings.json", "azure.yaml",
        "README.md", "infra/main.bicep", "infra/workbook.json", "infra/README.md",
        "infra/modules/functionapp.bicep", "infra/scripts/render-parameters.sh",
        f"wheels/{dist.wheel.name}",
    } <= files  # fmt: skip
    assert (app / "host.json").read_text() == (ROOT / "host.json").read_text()
    requirements = (app / "requirements.txt").read_text().splitlines()
    assert requirements[-2:] == [
        "--find-links wheels",
        "azure-messaging-replication[monitor]==0.1.0",
    ]
    # The remote build must receive the wheel: .funcignore leaves wheels/ in the package.
    assert "wheels" not in (app / ".funcignore").read_text()
    assert os.access(app / "infra" / "scripts" / "render-parameters.sh", os.X_OK)


def test_init_refuses_a_folder_that_holds_anything(environments: Environments, app: Path) -> None:
    again = run(["replication", "init", app], cwd=app.parent, venv=environments.bare)
    assert again.returncode == 2
    assert again.stderr == f"error: {app} exists and is not an empty folder: nothing written\n"


def test_the_app_validates_plans_renders_and_lints_from_the_wheel(
    environments: Environments, app: Path
) -> None:
    for command in (
        ["validate"],
        ["plan"],
        ["render", "bicep-params"],
        ["render", "az-cli"],
        ["render", "app-settings"],
        ["lint-rules"],
    ):
        result = run(
            ["replication", *command, "--topology", "topology.json"],
            cwd=app,
            venv=environments.bare,
        )
        assert result.returncode == 0, (command, result.stderr)
        assert "Traceback" not in result.stderr


def test_the_azd_hook_renders_the_parameters_with_the_installed_library_only(
    environments: Environments, app: Path
) -> None:
    (app / ".venv").symlink_to(environments.bare)  # the hook uses the app's .venv
    shutil.copy2(app / "topology.json", app / "orders.json")
    try:
        hook = run(["sh", "infra/scripts/render-parameters.sh"], cwd=app)
        assert hook.returncode == 0, hook.stderr
        parameters = json.loads((app / "infra" / "main.parameters.json").read_text())
        # Another file chosen with REPLICATION_TOPOLOGY is also the one the deployed app reads.
        other = run(["sh", "infra/scripts/render-parameters.sh"], cwd=app,
                    environ={"REPLICATION_TOPOLOGY": "orders.json"})  # fmt: skip
        assert other.returncode == 0, other.stderr
        chosen = json.loads((app / "infra" / "main.parameters.json").read_text())
    finally:
        (app / ".venv").unlink()
        (app / "orders.json").unlink()
    assert parameters["parameters"]["serviceBusNamespaces"]["value"]
    settings = "replicationAppSettings"
    assert parameters["parameters"][settings]["value"]["REPLICATION_TOPOLOGY"] == "topology.json"
    assert chosen["parameters"][settings]["value"]["REPLICATION_TOPOLOGY"] == "orders.json"
    # Without the `lint` extra the topology is still linted; the Bicep literals are not.
    assert "rule expression(s) checked, 0 rejected" in hook.stdout
    assert "not checked: pip install 'azure-messaging-replication[lint]'" in hook.stderr


def test_the_apps_requirements_install_as_the_remote_build_installs_them(
    app: Path, tmp_path: Path
) -> None:
    """Oryx installs ``requirements.txt`` with ``--target`` into the package it deploys; the
    worker then imports the app with that folder on ``sys.path``. Application Insights is set,
    as the Bicep sets it, so the ``monitor`` extra must be there."""
    target = tmp_path / "python_packages"
    installed = run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-compile", "-c",
         constraints(tmp_path), "-r", "requirements.txt", "--target", target],
        cwd=app,
        timeout=900,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stdout[-2000:] + installed.stderr[-2000:]
    indexed = run(
        [sys.executable, "-I", "-c",
         f"import sys; sys.path[:0] = [{str(app)!r}, {str(target)!r}]\n"
         "import function_app\nprint(sorted(f.get_function_name() for f in "
         "function_app.app.get_functions()))"],
        cwd=app,
        environ={
            "APPLICATIONINSIGHTS_CONNECTION_STRING": "InstrumentationKey="
            "00000000-0000-0000-0000-000000000000;IngestionEndpoint=http://127.0.0.1:9/",
        },
        timeout=120,
    )  # fmt: skip
    assert indexed.returncode == 0, indexed.stderr[-3000:]
    assert "orders-weu-to-neu" in indexed.stdout


def test_the_app_type_checks_against_the_installed_library(
    environments: Environments, app: Path
) -> None:
    checked = run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental",
         "--python-executable", environments.bare / "bin" / "python",
         "function_app.py", "app_transforms.py"],
        cwd=app,
        timeout=300,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr


@pytest.fixture
def emulator(environments: Environments, app: Path) -> Iterator[dict[str, str]]:
    """``replication emulator --topology --local-settings`` from the ``[all]`` environment."""
    process = subprocess.Popen(
        ["replication", "emulator", "--topology", "topology.json",
         "--local-settings", "local.settings.json"],
        cwd=app,
        env=clean_environ(venv=environments.full),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    settings: dict[str, str] = {}
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if line.startswith("export "):
                name, _, value = line.removeprefix("export ").strip().partition("=")
                settings[name] = value.strip("'")
            elif line.strip() == READY:
                break
        else:
            raise AssertionError(process.stderr.read() if process.stderr else "no output")
        yield settings
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_the_app_replicates_on_the_emulator_from_the_wheel(
    environments: Environments, app: Path, emulator: dict[str, str]
) -> None:
    """Messages published in weu reach neu's subscription, replicated by ``replication run``
    from the ``[all]`` environment, with the settings the emulator wrote for ``func start``:
    ``run`` reads them from ``local.settings.json`` beside the topology, nothing exported."""
    written = json.loads((app / "local.settings.json").read_text())["Values"]
    assert {name: written[name] for name in emulator} == emulator
    run_id = uuid.uuid4().hex[:8]
    published = [f"{run_id}-{n}" for n in range(10)]
    weu = ServiceBusClient.from_connection_string(emulator["SB_WEU"])
    with weu, weu.get_topic_sender("orders") as sender:
        sender.send_messages([ServiceBusMessage(b"{}", message_id=m) for m in published])
    replicated = run(
        ["replication", "run", "--topology", "topology.json", "--until-idle", "3",
         "--timeout", "120"],
        cwd=app,
        venv=environments.full,
        environ=dict.fromkeys(emulator, ""),  # empty counts as unset: the file's are read
        timeout=180,
    )  # fmt: skip
    assert replicated.returncode == 0, replicated.stderr[-3000:]
    assert "is not set" not in replicated.stderr
    received: dict[str, object] = {}
    neu = ServiceBusClient.from_connection_string(emulator["SB_NEU"])
    with neu, neu.get_subscription_receiver("orders", "billing", max_wait_time=5) as receiver:
        while batch := receiver.receive_messages(max_message_count=50, max_wait_time=5):
            for message in batch:
                properties = {
                    _text(key): _text(value)
                    for key, value in (message.application_properties or {}).items()
                }
                received[str(message.message_id)] = properties.get(REPL_ORIGIN)
                receiver.complete_message(message)
    assert received == dict.fromkeys(published, "weu")


def test_the_demo_runs_from_the_installed_package(
    environments: Environments, outside: Path
) -> None:
    shown = run(
        ["replication", "demo", "--only", "active-passive", "--output", "out"],
        cwd=outside,
        venv=environments.full,
        timeout=300,
    )
    assert shown.returncode == 0, shown.stdout[-3000:] + shown.stderr[-3000:]
    figures = json.loads((outside / "out" / "showcase.json").read_text())
    assert list(figures["scenarios"]) == ["active-passive"]


def test_the_repositorys_own_azd_hook_runs_on_a_fresh_copy_with_requirements_txt_only(
    tmp_path: Path,
) -> None:
    """The hook creates ``.venv`` from ``requirements.txt`` alone (no ``./dev.sh`` before it)
    and renders the parameters from a copy of the tracked files."""
    copy = tmp_path / "checkout"
    tracked = (
        subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
        .stdout.decode()
        .split("\0")
    )
    for name in filter(None, tracked):
        if (ROOT / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, copy / name)
    shutil.copy(copy / "examples" / "active-passive.json", copy / "topology.json")
    hook = run(
        ["sh", "infra/scripts/render-parameters.sh"],
        cwd=copy,
        # Pinned by requirements.txt anyway; no byte-compiling (as in conftest's installs).
        environ={"PIP_NO_COMPILE": "1", "PIP_CONSTRAINT": str(constraints(tmp_path))},
        timeout=900,
    )
    assert hook.returncode == 0, hook.stdout[-2000:] + hook.stderr[-2000:]
    assert (copy / "infra" / "main.parameters.json").is_file()
    assert "not checked: pip install 'azure-messaging-replication[lint]'" in hook.stderr


def test_the_drill_runs_from_the_installed_package(
    environments: Environments, tmp_path: Path
) -> None:
    """``replication drill`` on an app made from the failover example, outside any checkout;
    Azurite is a system requirement, named by ``REPLICATION_AZURITE`` here (the checkout's
    ``npm ci``), since the installed package has no ``node_modules`` of its own.

    The drill's calls get 20 s instead of its 5 s deadline: this tier runs beside pip installs
    and Spark on two cores, where an emulator once took over 5 s to list its partitions and the
    planned failback rightly gave up (exit 3). What is tested here is that the drill runs from
    the wheel; its deadlines are tested by the fault tier (tests/faults/test_failover_hangs.py)."""
    azurite = ROOT / "node_modules" / ".bin" / "azurite-blob"
    app = tmp_path / "drill-app"
    made = run(
        ["replication", "init", app, "--example", "active-passive-failover"],
        cwd=tmp_path,
        venv=environments.full,
    )
    assert made.returncode == 0, made.stderr
    if shutil.which("azurite-blob", path=clean_environ()["PATH"]) is None:
        without = run(["replication", "drill"], cwd=app, venv=environments.full)
        assert (without.returncode, without.stderr.splitlines()[-1]) == (
            2,
            "error: Azurite is needed for the failover binding store and is not installed: npm "
            "install -g azurite (Node.js 18+), or set REPLICATION_AZURITE to its azurite-blob "
            "command",
        )
    drilled = run(
        ["replication", "drill", "--call-timeout", "20"],
        cwd=app,
        venv=environments.full,
        environ={"REPLICATION_AZURITE": str(azurite)},
        timeout=600,
    )
    assert drilled.returncode == 0, drilled.stdout[-3000:] + drilled.stderr[-3000:]
    assert "lost at the end: none" in drilled.stdout


def test_the_console_script_finds_the_apps_own_modules(
    environments: Environments, app: Path, tmp_path: Path
) -> None:
    """``module:function`` and ``--transforms`` resolve beside the topology and in the working
    directory from the console script (which, unlike ``python -m``, puts neither on
    ``sys.path``); what is not found names the folders searched."""
    document = json.loads((app / "topology.json").read_text())
    document["tasks"][0]["transform"] = "stamp_region"
    (app / "registered.json").write_text(json.dumps(document))
    document["tasks"][0]["transform"] = "app_transforms:stamp_region"
    (app / "referenced.json").write_text(json.dumps(document))

    def validate(cwd: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
        return run(["replication", "validate", *arguments], cwd=cwd, venv=environments.bare)

    unregistered = validate(app, "--topology", "registered.json")
    assert unregistered.returncode == 2
    assert "no transform registered as 'stamp_region'" in unregistered.stderr
    assert "--transforms MODULE:NAME" in unregistered.stderr
    for cwd, arguments in (
        (app, ["--topology", "registered.json", "--transforms", "app_transforms:transforms"]),
        (tmp_path, ["--topology", str(app / "referenced.json")]),  # beside the topology
        (app, ["--topology", "referenced.json"]),
    ):
        found = validate(cwd, *arguments)
        assert found.returncode == 0, (cwd, arguments, found.stderr)
    missing = validate(tmp_path, "--topology", str(app / "topology.json"), "--transforms",
                       "nowhere_42:transforms")  # fmt: skip
    assert missing.returncode == 2
    assert missing.stderr == (
        f"error: --transforms: module 'nowhere_42' not found in {tmp_path.resolve()} (the "
        f"current directory), {app.resolve()} (the topology's folder), the installed packages: "
        "put it beside the topology file (or function_app.py) or install it into the app's "
        "environment\n"
    )

"""``python -m replication failover|failback`` against the emulator and Azurite.

The namespaces of ``examples/active-passive-failover.json`` run in one in-process emulator; no
replicator runs, so what is in a replication subscription stays there (the backlog a planned
failover waits for). The binding documents are read back from the store after each command.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from azure.servicebus import ServiceBusClient, ServiceBusMessage

pytest.importorskip("proton", reason="the emulator needs python-qpid-proton")

import emulator
from replication.cli import main
from replication.exit_codes import ExitCode
from replication.failover import FailoverStore, Role, SwitchInProgressError
from replication.failover._bindings import BindingDocument, parse_bindings
from replication.failover._plan import Direction, SwitchRefusedError
from replication.failover.switching import switch
from replication.render.emulator_config import emulator_config
from replication.topology import Topology, load_topology
from tests.e2e.test_failover_clients import drain

pytestmark = pytest.mark.emulator

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "active-passive-failover.json"


@pytest.fixture(scope="module")
def topology() -> Topology:
    return load_topology(EXAMPLE)


@pytest.fixture(scope="module")
def settings(topology: Topology, azurite: str) -> Iterator[dict[str, str]]:
    with emulator.run_emulator(emulator_config(topology)) as running:
        yield {**running.app_settings(topology), "AzureWebJobsStorage": azurite}


@pytest.fixture
def store(azurite: str) -> Iterator[FailoverStore]:
    store = FailoverStore.from_connection_string(azurite, f"failover-{uuid.uuid4().hex[:8]}")
    yield store
    store.close()


def document(store: FailoverStore, app: str) -> BindingDocument | None:
    data, _ = store.read_bindings(app, None)
    return parse_bindings(data, source="test") if data else None


def publish(connection: str, ids: list[str], topic: str = "orders") -> None:
    with (
        ServiceBusClient.from_connection_string(connection) as client,
        client.get_topic_sender(topic) as sender,
    ):
        sender.send_messages([ServiceBusMessage(b"x", message_id=i) for i in ids])


def run_switch(
    topology: Topology, store: FailoverStore, settings: dict[str, str], app: str, **options: object
) -> tuple[int, str]:
    out = io.StringIO()
    options = {"entity": "orders", "settle": 0.2, "timeout": 5.0, **options}
    code = switch(topology, store, settings, app=app, instance=None, out=out, **options)  # type: ignore[arg-type]
    return code, out.getvalue()


def test_a_dry_run_prints_the_steps_and_figures_and_changes_nothing(
    topology: Topology, store: FailoverStore, settings: dict[str, str]
) -> None:
    app = f"dry-{uuid.uuid4().hex[:6]}"
    code, text = run_switch(
        topology,
        store,
        settings,
        app,
        target="secondary",
        direction=Direction.FAILOVER,
        dry_run=True,
    )
    assert code == ExitCode.OK
    assert "1. move publishers of " in text
    assert "wait until replication primary -> secondary has copied everything" in text
    assert "replication backlog of orders-to-secondary: 0" in text
    assert "dry run: nothing changed" in text
    assert document(store, app) is None


def test_the_dry_run_and_status_read_the_same_figures(
    topology: Topology,
    store: FailoverStore,
    settings: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """One reader for both: the backlog and RPO ``status --json`` reports are what the dry run
    prints before the switch, with the same task lines."""
    app = f"figures-{uuid.uuid4().hex[:6]}"
    publish(settings["SB_PRIMARY"], [f"unreplicated-{i}" for i in range(3)])
    try:
        for name, value in settings.items():
            monkeypatch.setenv(name, value)
        assert main(["status", "--topology", str(EXAMPLE), "--json"]) == ExitCode.OK
        report = json.loads(capsys.readouterr().out)
        (task,) = [t for t in report["tasks"] if t["task"] == "orders-to-secondary"]
        assert task["state"] == "replicating"  # three young messages: within lagThreshold
        assert task["backlog"] == {"count": 3, "atLeast": False}
        assert task["rpo"]["messages"] == 3
        assert task["unreplicatedMessageIds"] == [f"unreplicated-{i}" for i in range(3)]
        assert 0 <= task["oldestUnreplicatedSeconds"] < 60
        code, text = run_switch(
            topology,
            store,
            settings,
            app,
            target="secondary",
            direction=Direction.FAILOVER,
            dry_run=True,
        )
        assert code == ExitCode.OK
        assert (
            "replication backlog of orders-to-secondary: 3 (the RPO of a failover now: "
            "3 messages, the last "
        ) in text
        assert (
            "orders-to-secondary (primary/orders/Subscriptions/replication): backlog 3, "
            "dead-lettered 0, parked 0"
        ) in text, text
        assert "REPLICATING; oldest unreplicated " in text
    finally:
        drain(settings["SB_PRIMARY"], "replication")
        drain(settings["SB_PRIMARY"])


def test_a_planned_failover_and_failback_move_publishers_then_consumers(
    topology: Topology, store: FailoverStore, settings: dict[str, str]
) -> None:
    app = f"planned-{uuid.uuid4().hex[:6]}"
    code, text = run_switch(
        topology, store, settings, app, target="secondary", direction=Direction.FAILOVER
    )
    assert code == ExitCode.OK, text
    moved = document(store, app)
    assert moved is not None
    assert moved.resolve(None, "orders", Role.PUBLISH) == "secondary"
    assert moved.resolve(None, "orders", Role.CONSUME) == "secondary"
    assert [(r.kind, r.outcome, r.unreplicated) for r in moved.history] == [("planned", "done", 0)]
    assert moved.switch is None
    # Two messages published directly to the secondary while failed over: a failback waits
    # for the consumers to drain them, and gives up (publishers back, consumers stay) if not.
    publish(settings["SB_SECONDARY"], ["direct-1", "direct-2"])
    code, text = run_switch(
        topology, store, settings, app, target="primary", direction=Direction.FAILBACK, timeout=1.5
    )
    assert code == ExitCode.UNAVAILABLE, text
    assert "secondary/orders/Subscriptions/billing: 2 left" in text
    back = document(store, app)
    assert back is not None
    assert back.resolve(None, "orders", Role.PUBLISH) == "secondary"
    assert back.history[-1].outcome == "timed out"
    assert sorted(drain(settings["SB_SECONDARY"])) == ["direct-1", "direct-2"]
    code, text = run_switch(
        topology, store, settings, app, target="primary", direction=Direction.FAILBACK
    )
    assert code == ExitCode.OK, text
    home = document(store, app)
    assert home is not None
    assert home.resolve(None, "orders", Role.CONSUME) == "primary"
    code, text = run_switch(
        topology, store, settings, app, target="primary", direction=Direction.FAILBACK
    )
    assert code == ExitCode.OK
    assert "nothing to do" in text


def test_a_planned_failover_waits_for_the_backlog_and_a_forced_one_names_it(
    topology: Topology, store: FailoverStore, settings: dict[str, str]
) -> None:
    app = f"backlog-{uuid.uuid4().hex[:6]}"
    ids = [f"stuck-{i}" for i in range(3)]
    publish(settings["SB_PRIMARY"], ids)  # no replicator runs: they stay unreplicated
    try:
        code, text = run_switch(
            topology,
            store,
            settings,
            app,
            target="secondary",
            direction=Direction.FAILOVER,
            timeout=1.5,
        )
        assert code == ExitCode.UNAVAILABLE, text
        assert "orders-to-secondary 3" in text
        stayed = document(store, app)
        assert stayed is not None
        assert stayed.resolve(None, "orders", Role.PUBLISH) == "primary"
        code, text = run_switch(
            topology,
            store,
            settings,
            app,
            target="secondary",
            direction=Direction.FAILOVER,
            force=True,
        )
        assert code == ExitCode.OK, text
        assert "orders-to-secondary: 3 messages not replicated: stuck-0, stuck-1, stuck-2" in text
        forced = document(store, app)
        assert forced is not None
        assert forced.history[-1].unreplicated == 3
        assert forced.resolve(None, "orders", Role.CONSUME) == "secondary"
    finally:
        drain(settings["SB_PRIMARY"], "replication")
        drain(settings["SB_PRIMARY"])


def test_refusals_name_the_problem(
    topology: Topology, store: FailoverStore, settings: dict[str, str]
) -> None:
    app = f"refused-{uuid.uuid4().hex[:6]}"
    with pytest.raises(
        SwitchRefusedError,
        match="'primary-events' is not part of the replication of entity 'orders': primary -> ",
    ):
        run_switch(
            topology, store, settings, app, target="primary-events", direction=Direction.FAILOVER
        )
    with pytest.raises(
        SwitchRefusedError,
        match="no active_passive or all_active task replicates entity 'invoices'",
    ):
        run_switch(
            topology,
            store,
            settings,
            app,
            entity="invoices",
            target="secondary",
            direction=Direction.FAILOVER,
        )
    with pytest.raises(
        SwitchRefusedError, match=r"is not a replica of 'secondary'.*use `failover`"
    ):
        run_switch(topology, store, settings, app, target="secondary", direction=Direction.FAILBACK)
    with (
        store.switch_lease(app, holder="someone else"),
        pytest.raises(SwitchInProgressError, match="another switch of application"),
    ):
        run_switch(topology, store, settings, app, target="secondary", direction=Direction.FAILOVER)


def test_the_command_line_exits_2_with_one_line_for_a_refused_switch(
    settings: dict[str, str], azurite: str
) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "replication",
            "failover",
            "--topology",
            str(EXAMPLE),
            "--app",
            "cli",
            "--entity",
            "orders",
            "--to",
            "nowhere",
        ],
        cwd=ROOT,
        env={
            **os.environ,
            **settings,
            "REPLICATION_FAILOVER_CONTAINER": f"cli-{uuid.uuid4().hex[:6]}",
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == ExitCode.CONFIGURATION
    assert result.stderr.strip().splitlines() == [
        "error: namespace 'nowhere' is not part of the replication of entity 'orders': "
        "primary -> secondary (orders-to-secondary); choose one of primary, secondary"
    ]

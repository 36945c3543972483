"""Planning a switch against a binding document that names a namespace outside the topology's
replication of the entity (issue 36, finding 8: it used to be refused, ``--force`` too, with a
message that did not name the blob, so only a hand edit repaired it)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from replication.exceptions import SwitchRefusedError
from replication.failover._bindings import new_document
from replication.failover._plan import Direction, SwitchPlan, plan_switch
from replication.topology import load_topology

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "active-passive-failover.json"
BLOB = "replication-failover/bindings/orders-app.json"


def plan(
    *, force: bool, direction: Direction = Direction.FAILBACK, target: str = "primary"
) -> SwitchPlan:
    document = new_document("orders-app", ["primary", "secondary", "retired"], "primary").bound(
        instance=None, entity="orders", publish="retired", consume="retired", default="primary"
    )
    return plan_switch(
        load_topology(EXAMPLE),
        document,
        app="orders-app",
        instance=None,
        entity="orders",
        target=target,
        direction=direction,
        force=force,
        settle=timedelta(seconds=1),
        document_source=BLOB,
    )


@pytest.mark.parametrize("direction", list(Direction))
def test_a_planned_switch_names_the_blob_and_the_rule(direction: Direction) -> None:
    target = "primary" if direction is Direction.FAILBACK else "secondary"
    with pytest.raises(SwitchRefusedError) as refused:
        plan(force=False, direction=direction, target=target)
    assert str(refused.value).startswith(
        f"{BLOB}: bindings[1] binds orders-app/orders to 'retired', which is not part of the "
        "replication of entity 'orders' (primary -> secondary (orders-to-secondary)); "
        f"`--force --to {target}` moves the clients from there"
    )


def test_a_forced_switch_moves_the_clients_from_there() -> None:
    planned = plan(force=True)
    assert (planned.source, planned.target) == ("retired", "primary")
    assert planned.replication_tasks == ()  # nothing replicates from there: RPO unknown
    assert planned.drain == ()

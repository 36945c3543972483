"""Binding documents, the clients' view of them, and the publisher's own switch."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import pytest

from replication.failover import MemoryFailoverStore, Role
from replication.failover._bindings import (
    BindingDocumentError,
    RestorePoint,
    SwitchKind,
    SwitchRecord,
    new_document,
    parse_bindings,
    render_bindings,
)
from replication.failover._follower import BindingFollower
from replication.failover._publisher import PublisherCore

NAMES = ["primary", "secondary"]


class Ticks:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def follower(
    store: MemoryFailoverStore | None, ticks: Ticks, *, instance: str | None = None
) -> BindingFollower:
    return BindingFollower(
        store,
        app="app",
        instance=instance,
        entity="orders",
        role=Role.PUBLISH,
        namespaces=NAMES,
        poll_interval=timedelta(seconds=5),
        clock=ticks,
        background=False,  # the fake clock decides when a read is due
    )


def test_the_most_specific_rule_wins() -> None:
    document = new_document("app", NAMES, "primary")
    document = document.bound(
        instance=None, entity="orders", publish="secondary", default="primary"
    )
    document = document.bound(instance="i-1", entity=None, consume="secondary", default="primary")
    assert document.resolve(None, "orders", Role.PUBLISH) == "secondary"
    assert document.resolve(None, "orders", Role.CONSUME) == "primary"
    assert document.resolve("i-1", "payments", Role.CONSUME) == "secondary"
    assert document.resolve("i-1", "orders", Role.CONSUME) == "secondary"
    assert document.resolve("i-1", "orders", Role.PUBLISH) == "primary"  # instance beats entity
    assert document.resolve("i-2", "payments", Role.PUBLISH) == "primary"
    assert document.generation == 2
    assert parse_bindings(render_bindings(document), source="b") == document


def test_a_finished_switch_goes_to_the_history() -> None:
    started = datetime(2026, 1, 1, tzinfo=UTC)
    record = SwitchRecord(
        id="s1",
        kind=SwitchKind.FORCED,
        source="primary",
        target="secondary",
        phase="publishers-moved",
        started_at=started,
        by="test",
    )
    running = new_document("app", NAMES, "primary").with_switch(record)
    assert running.switch == record
    done = running.with_switch(record.model_copy(update={"finished_at": started, "outcome": "ok"}))
    assert done.switch is None
    assert [r.id for r in done.history] == ["s1"]


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"{", "bindings.json: not a JSON document"),
        (
            b'{"app": "a", "namespaces": []}',
            "bindings.json: namespaces: List should have at least 1",
        ),
        (
            b'{"app": "a", "namespaces": ["p"], "bindings": [{"publish": "q", "consume": "p"}]}',
            "bindings.json: bindings[0].publish: unknown namespace 'q'; known: p",
        ),
        (b'{"app": "a", "namespaces": ["p"], "extra": 1}', "bindings.json: extra: Extra inputs"),
        (
            b'{"schema": 2, "app": "a", "namespaces": ["p"]}',
            "bindings.json: schema: Input should be 1",
        ),
    ],
)
def test_a_bad_document_is_refused_with_its_path(data: bytes, problem: str) -> None:
    with pytest.raises(BindingDocumentError) as raised:
        parse_bindings(data, source="bindings.json")
    assert str(raised.value).startswith(problem)


def test_a_client_follows_the_store_once_per_poll_interval() -> None:
    store, ticks = MemoryFailoverStore(), Ticks()
    client = follower(store, ticks)
    assert client.namespace() == "primary"  # no document yet: the first namespace
    document = new_document("app", NAMES, "primary").bound(
        instance=None, entity=None, publish="secondary", default="primary"
    )
    store.put_bindings("app", render_bindings(document))
    ticks.now = 4.9
    assert client.namespace() == "primary"
    ticks.now = 5.0
    assert client.namespace() == "secondary"
    assert client.generation == 1
    reads = store.reads
    ticks.now = 10.0
    assert client.namespace() == "secondary"
    assert store.reads == reads + 1  # unchanged: a conditional read


def test_a_client_stays_where_it_was_when_the_store_fails_or_misleads(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store, ticks = MemoryFailoverStore(), Ticks()
    client = follower(store, ticks)
    store.put_bindings(
        "app",
        render_bindings(
            new_document("app", NAMES, "primary").bound(
                instance=None, entity=None, publish="secondary", default="primary"
            )
        ),
    )
    assert client.namespace() == "secondary"
    caplog.set_level(logging.WARNING)
    store.unavailable = True
    ticks.now += 5
    assert client.namespace() == "secondary"
    assert "unreachable" in (client.problem or "")
    store.unavailable = False
    store.put_bindings("app", b"not json")
    ticks.now += 5
    assert client.namespace() == "secondary"
    assert "not usable" in (client.problem or "")
    unknown = new_document("app", [*NAMES, "third"], "primary").bound(
        instance=None, entity=None, publish="third", default="primary"
    )
    store.put_bindings("app", render_bindings(unknown))
    ticks.now += 5
    assert client.namespace() == "secondary"
    assert "does not know" in (client.problem or "")
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 3
    assert all("staying on secondary" in warning for warning in warnings)


def test_an_unreachable_store_at_start_means_the_first_namespace() -> None:
    store, ticks = MemoryFailoverStore(), Ticks()
    store.unavailable = True
    assert follower(store, ticks).namespace() == "primary"


def test_the_publisher_moves_after_the_window_and_holds_until_the_store_changes() -> None:
    store, ticks = MemoryFailoverStore(), Ticks()
    core = PublisherCore(
        follower(store, ticks), unavailability_window=timedelta(seconds=10), clock=ticks
    )
    error = ConnectionError("refused")
    assert core.target() == "primary"
    assert core.failed("primary", error) is None
    ticks.now = 9.9
    assert core.failed("primary", error) is None
    ticks.now = 10.0
    assert core.failed("primary", error) == "secondary"
    ticks.now = 20.0
    assert core.target() == "secondary"  # the store still says primary; the choice holds
    document = new_document("app", NAMES, "primary").bound(
        instance=None, entity=None, publish="primary", default="primary"
    )
    store.put_bindings("app", render_bindings(document))
    ticks.now = 30.0
    assert core.target() == "primary"  # a new generation: the operator's decision wins
    assert (core.counters.own_switches, core.counters.failures) == (1, 3)


def test_a_success_resets_the_window() -> None:
    ticks = Ticks()
    core = PublisherCore(
        follower(None, ticks), unavailability_window=timedelta(seconds=10), clock=ticks
    )
    core.failed("primary", ConnectionError())
    ticks.now = 8
    core.succeeded("primary")
    ticks.now = 12
    assert core.failed("primary", ConnectionError()) is None


def test_a_switch_record_keeps_its_restore_point_and_restoring_puts_back_the_exact_rule() -> None:
    started = datetime(2026, 1, 1, tzinfo=UTC)
    found = new_document("app", NAMES, "primary")
    assert found.restore_point(None, "orders") == RestorePoint()  # no exact rule
    record = SwitchRecord(
        id="s1",
        kind=SwitchKind.PLANNED,
        source="primary",
        target="secondary",
        entity="orders",
        phase="publishers moved",
        started_at=started,
        by="test",
        restore=found.restore_point(None, "orders"),
    )
    moved = found.bound(
        instance=None, entity="orders", publish="secondary", default="primary"
    ).with_switch(record)
    assert parse_bindings(render_bindings(moved), source="b").switch == record
    assert moved.resolve(None, "orders", Role.PUBLISH) == "secondary"
    back = moved.restored(None, "orders", record.restore or RestorePoint())
    assert back.bindings == found.bindings  # the exact rule removed again, as found
    pinned = RestorePoint(publish="primary", consume="secondary")
    assert moved.restored(None, "orders", pinned).resolve(None, "orders", Role.CONSUME) == (
        "secondary"
    )
    with pytest.raises(ValueError, match="both publish and consume, or neither"):
        RestorePoint(publish="primary")


def test_binding_to_a_namespace_the_document_does_not_list_adds_it() -> None:
    document = new_document("app", ["primary"], "primary").bound(
        instance=None, entity=None, publish="secondary", default="primary"
    )
    assert document.namespaces == ["primary", "secondary"]
    assert parse_bindings(render_bindings(document), source="b") == document


def test_the_window_counts_from_the_start_of_the_first_failed_attempt() -> None:
    """Issue 36, finding 6: an attempt that hangs for a call deadline before it fails has
    used the window already."""
    ticks = Ticks()
    core = PublisherCore(
        follower(None, ticks), unavailability_window=timedelta(seconds=3), clock=ticks
    )
    ticks.now = 10.0  # the first attempt began at 0 and got no answer for 10 s
    assert core.failed("primary", TimeoutError(), started=0.0) == "secondary"
    ticks.now = 20.0
    core.succeeded("secondary")
    ticks.now = 21.0  # an attempt begun before that success does not reach back past it
    assert core.failed("secondary", TimeoutError(), started=15.0) is None


def test_a_store_readable_again_clears_the_problem_though_the_document_did_not_change() -> None:
    """Found with issue 36's frozen store: an unchanged document (a 304) after an outage used
    to leave ``problem`` saying the store was unreachable."""
    store, ticks = MemoryFailoverStore(), Ticks()
    client = follower(store, ticks)
    store.put_bindings("app", render_bindings(new_document("app", NAMES, "secondary")))
    assert client.namespace() == "secondary"
    store.unavailable = True
    ticks.now += 5
    assert client.namespace() == "secondary"
    assert "unreachable" in (client.problem or "")
    store.unavailable = False
    ticks.now += 5
    assert client.namespace() == "secondary"
    assert client.problem is None

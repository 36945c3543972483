"""Heartbeats: the topics, subscriptions and tasks the ``heartbeats`` section adds, its
validation errors (file and JSON path), the heartbeat message and the ages a reader records."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from replication.exceptions import ConfigurationError
from replication.heartbeats import (
    Heartbeat,
    HeartbeatBook,
    heartbeat_now,
    heartbeat_observations,
    parse_heartbeat,
    watch_paths,
)
from replication.hosts.functions import build_app
from replication.render.access import role_assignments
from replication.topology import (
    HEARTBEAT_READER,
    HEARTBEAT_STATUS,
    Topology,
    heartbeat_lookback,
    heartbeat_paths,
    heartbeat_schedule,
    load_topology,
    materialize,
    parse_topology,
)

ROOT = Path(__file__).resolve().parents[2]
MESH = ROOT / "examples" / "three-region-mesh.json"
STREAM = ROOT / "examples" / "active-passive-and-stream.json"


def _with_heartbeats(path: Path, **section: Any) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    document["heartbeats"] = {"enabled": True, **section}
    return document


def _topic(topology: Topology, namespace: str, name: str) -> Any:
    return next(t for t in topology.namespace(namespace).topics if t.name == name)


def test_heartbeats_are_off_by_default() -> None:
    topology = load_topology(MESH)
    assert not topology.heartbeats.enabled
    assert heartbeat_paths(topology) == []
    assert all("heartbeat" not in task.name for task in topology.tasks)


def test_one_heartbeat_task_per_path_reading_its_own_subscription() -> None:
    topology = parse_topology(_with_heartbeats(MESH), source="mesh.json")
    paths = [(p.origin, p.target, p.task) for p in heartbeat_paths(topology)]
    assert paths == [
        ("weu", "eus", "heartbeat-weu-to-eus"),
        ("weu", "sea", "heartbeat-weu-to-sea"),
        ("eus", "weu", "heartbeat-eus-to-weu"),
        ("eus", "sea", "heartbeat-eus-to-sea"),
        ("sea", "weu", "heartbeat-sea-to-weu"),
        ("sea", "eus", "heartbeat-sea-to-eus"),
    ]
    task = topology.resolved("heartbeat-weu-to-eus")
    assert task.spec.pattern == "all_active"
    assert task.spec.source.describe() == (
        "weu/replication-heartbeat/Subscriptions/replication-to-eus"
    )
    assert [t.entity_path for t in task.spec.targets] == ["eus/replication-heartbeat"]
    assert task.spec.dead_letter_target is not None
    assert task.spec.dead_letter_target.entity_path == "weu/replication-parked"
    assert task.lane_of is None


def test_materialize_adds_topics_loop_prevention_rules_and_reader_subscriptions() -> None:
    topology = materialize(parse_topology(_with_heartbeats(MESH, interval="PT10M")))
    topic = _topic(topology, "weu", "replication-heartbeat")
    assert topic.default_message_time_to_live == timedelta(minutes=100)
    subscriptions = {s.name: s for s in topic.subscriptions}
    assert sorted(subscriptions) == [
        HEARTBEAT_READER,
        HEARTBEAT_STATUS,
        "replication-to-eus",
        "replication-to-sea",
    ]
    assert subscriptions[HEARTBEAT_READER].rules == []
    # What status peeks: every heartbeat, kept for the look-back (twice heartbeatMaxAge, at
    # least three intervals: here 3 x 10 min), so "none there" means "older than the threshold".
    assert subscriptions[HEARTBEAT_STATUS].rules == []
    assert subscriptions[HEARTBEAT_STATUS].default_message_time_to_live == timedelta(minutes=30)
    assert heartbeat_lookback(topology) == timedelta(minutes=30)
    (rule,) = subscriptions["replication-to-eus"].rules
    assert rule.name == "$Default"
    assert rule.filter.sql == "replication IS NULL"
    assert rule.action == "SET replication = 1"
    short = parse_topology(_with_heartbeats(MESH, interval="PT1S"))
    assert _topic(short, "eus", "replication-heartbeat").default_message_time_to_live == (
        timedelta(hours=1)
    )


def test_event_hub_namespaces_get_a_heartbeat_hub_of_their_own() -> None:
    """An Event Hubs source namespace publishes on an event hub of its own (never the user's
    hub, whose consumers would see heartbeats as data); its heartbeat task reads that hub with a
    consumer group of its own and parks where the path's first task parks; a receiving Event
    Hubs namespace's hub gets the reader's consumer group (status reads ``$Default``)."""
    document = _with_heartbeats(STREAM)
    document["namespaces"].append(
        {
            "name": "ingest-copy", "region": "northeurope", "kind": "eventhubs",
            "fullyQualifiedNamespace": "contoso-ingest-neu.servicebus.windows.net",
            "connection": "EH_COPY", "eventHubs": [{"name": "devices", "partitionCount": 4}],
        }
    )  # fmt: skip
    document["tasks"].append(
        {
            "name": "devices-to-copy", "pattern": "active_passive",
            "source": {"namespace": "ingest", "entity": "devices", "consumerGroup": "copy"},
            "targets": [{"namespace": "ingest-copy", "entity": "devices"}],
            "deadLetterTarget": {"namespace": "standby", "entity": "device-events-rejected"},
            "options": {"replicaTimeToLive": "PT1H"},
        }
    )  # fmt: skip
    topology = materialize(parse_topology(document, source="stream.json"))
    paths = [(p.origin, p.target, p.task) for p in heartbeat_paths(topology)]
    assert paths == [
        ("primary", "standby", "heartbeat-primary-to-standby"),
        ("ingest", "standby", "heartbeat-ingest-to-standby"),
        ("ingest", "ingest-copy", "heartbeat-ingest-to-ingest-copy"),
    ]
    task = topology.resolved("heartbeat-ingest-to-standby")
    assert task.spec.source.describe() == (
        "ingest/replication-heartbeat/ConsumerGroups/replication-to-standby"
    )
    assert [t.entity_path for t in task.spec.targets] == ["standby/replication-heartbeat"]
    assert task.spec.dead_letter_target is not None
    assert task.spec.dead_letter_target.entity_path == "standby/device-events-rejected"
    hubs = {hub.name: hub for hub in topology.namespace("ingest").event_hubs}
    assert hubs["devices"].consumer_groups == ["replication", "copy"]  # the user's, unchanged
    assert hubs["replication-heartbeat"].partition_count == 1
    assert hubs["replication-heartbeat"].consumer_groups == [
        "replication-to-standby",
        "replication-to-ingest-copy",
    ]
    (received,) = [
        hub for hub in topology.namespace("ingest-copy").event_hubs if hub.name != "devices"
    ]
    assert received.consumer_groups == [HEARTBEAT_READER]
    topic = _topic(topology, "standby", "replication-heartbeat")
    assert {s.name for s in topic.subscriptions} == {HEARTBEAT_READER, HEARTBEAT_STATUS}
    functions = {
        str(f.get_function_name()): json.loads(f.get_function_json())
        for f in build_app(parse_topology(document), environ={}).get_functions()
    }
    (reader,) = functions["heartbeat-read-ingest-copy"]["bindings"]
    assert reader["type"] == "eventHubTrigger"
    assert (reader["eventHubName"], reader["consumerGroup"]) == (
        "replication-heartbeat",
        HEARTBEAT_READER,
    )
    (task_trigger, *_) = functions["heartbeat-ingest-to-standby"]["bindings"]
    assert (task_trigger["eventHubName"], task_trigger["consumerGroup"]) == (
        "replication-heartbeat",
        "replication-to-standby",
    )
    roles = {(r.namespace, r.entity, r.role) for r in role_assignments(topology)}
    assert ("contoso-ingest", "replication-heartbeat", "sender") in roles  # the timer
    assert ("contoso-ingest-neu", "replication-heartbeat", "receiver") in roles  # the reader


def test_a_basic_event_hubs_namespace_takes_no_part() -> None:
    """Basic allows one consumer group per event hub: no heartbeat task could read its hub
    beside the reader, so its paths are left out (status then shows no heartbeat path)."""
    document = _with_heartbeats(STREAM)
    document["namespaces"][2]["sku"] = "Basic"
    topology = parse_topology(document)
    assert [p.origin for p in heartbeat_paths(topology)] == ["primary"]
    assert "replication-heartbeat" not in topology.namespace("ingest").entity_names()


def test_custom_entity_and_the_functions_and_roles_it_needs() -> None:
    topology = parse_topology(_with_heartbeats(MESH, entity="beats", interval="PT30S"))
    assert _topic(topology, "sea", "beats").name == "beats"
    functions = {
        str(f.get_function_name()): json.loads(f.get_function_json())
        for f in build_app(topology, environ={}).get_functions()
    }
    (timer,) = functions["heartbeat-publish"]["bindings"]
    assert timer["type"] == "timerTrigger"
    assert timer["schedule"] == "*/30 * * * * *"
    (reader,) = functions["heartbeat-read-eus"]["bindings"]
    assert (reader["topicName"], reader["subscriptionName"]) == ("beats", HEARTBEAT_READER)
    assert "heartbeat-weu-to-eus" in functions
    roles = {(r.entity, r.role, r.subscription) for r in role_assignments(topology)}
    assert ("beats", "sender", None) in roles
    assert ("beats", "receiver", HEARTBEAT_READER) in roles


def test_off_heartbeats_leave_the_functions_unchanged() -> None:
    names = [
        str(f.get_function_name())
        for f in build_app(load_topology(MESH), environ={}).get_functions()
    ]
    assert not [name for name in names if "heartbeat" in name]


@pytest.mark.parametrize(
    ("section", "location", "message"),
    [
        ({"interval": "PT7S"}, "heartbeats.interval", "cannot be a Functions timer schedule"),
        ({"interval": "PT0S"}, "heartbeats.interval", "greater than"),
        ({"entity": "bad name!"}, "heartbeats.entity", "should match pattern"),
        ({"enabld": True}, "heartbeats.enabld", "unknown key"),
        ({"entity": "telemetry"}, "heartbeats.entity", "already declares an entity"),
    ],
)
def test_invalid_sections_name_file_and_path(
    section: dict[str, Any], location: str, message: str
) -> None:
    document = _with_heartbeats(MESH, **section)
    with pytest.raises(ConfigurationError) as raised:
        parse_topology(document, source="mesh.json")
    text = str(raised.value)
    assert text.startswith(f"mesh.json: {location}: "), text
    assert message in text


def test_a_task_named_like_a_heartbeat_task_is_refused() -> None:
    document = _with_heartbeats(MESH)
    clash = copy.deepcopy(document["tasks"][0])
    clash["name"] = "heartbeat-weu-to-eus"
    clash["source"]["subscription"] = "other"
    clash["targets"] = clash["targets"][:1]
    document["tasks"].append(clash)
    with pytest.raises(ConfigurationError, match=r"mesh\.json: heartbeats: .*'heartbeat-weu"):
        parse_topology(document, source="mesh.json")


@pytest.mark.parametrize(
    ("seconds", "expression"),
    [
        (1, "*/1 * * * * *"),
        (15, "*/15 * * * * *"),
        (60, "0 * * * * *"),
        (300, "0 */5 * * * *"),
        (3600, "0 0 * * * *"),
        (21600, "0 0 */6 * * *"),
        (86400, "0 0 0 * * *"),
        (7, None),
        (90, None),
        (0.5, None),
    ],
)
def test_timer_schedules(seconds: float, expression: str | None) -> None:
    assert heartbeat_schedule(timedelta(seconds=seconds)) == expression


def test_heartbeat_message_round_trip_and_stable_id() -> None:
    moment = datetime(2026, 11, 23, 22, 40, 1, 123456, tzinfo=UTC)
    heartbeat = heartbeat_now("weu", moment)
    envelope = heartbeat.envelope()
    assert envelope.message_id == "heartbeat/weu/2026-11-23T22:40:01.123Z"
    assert envelope.subject == "replication-heartbeat"
    assert json.loads(envelope.body) == {"origin": "weu", "publishedAt": "2026-11-23T22:40:01.123Z"}
    assert parse_heartbeat(envelope.body) == heartbeat
    assert heartbeat_now("weu", moment).message_id == heartbeat.message_id
    for junk in (b"", b"{}", b"[1]", b'{"origin": 1, "publishedAt": "x"}', b"\xff"):
        assert parse_heartbeat(junk) is None
    naive = b'{"origin": "weu", "publishedAt": "2026-11-23T22:40:01"}'
    assert parse_heartbeat(naive) is None


def test_book_keeps_the_latest_heartbeat_per_path() -> None:
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    book = HeartbeatBook(clock=lambda: now)
    book.expect("weu", "neu")
    book.expect("sea", "neu")
    assert book.ages() == {("weu", "neu"): None, ("sea", "neu"): None}
    assert book.record(Heartbeat("weu", now - timedelta(seconds=3)), "neu")
    assert book.record(Heartbeat("weu", now - timedelta(seconds=30)), "neu")  # older: kept 3 s
    assert not book.record(Heartbeat("neu", now), "neu")  # its own heartbeat: not a path
    assert book.ages() == {("weu", "neu"): 3.0, ("sea", "neu"): None}
    assert book.age_into("neu") == {"weu": 3.0, "sea": None}
    (observation,) = heartbeat_observations(book)
    assert observation.value == 3.0
    assert observation.attributes == {"replication.origin": "weu", "replication.target": "neu"}


def test_a_reader_records_heartbeat_bodies_and_ignores_anything_else() -> None:
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    book = HeartbeatBook(clock=lambda: now)
    assert book.receive(heartbeat_now("weu", now - timedelta(seconds=2)).envelope().body, "neu")
    assert not book.receive(b"not json", "neu")
    assert not book.receive(heartbeat_now("neu", now).envelope().body, "neu")  # its own
    assert book.ages() == {("weu", "neu"): 2.0}


def test_both_hosts_watch_the_same_paths() -> None:
    off = HeartbeatBook()
    assert not watch_paths(off, load_topology(MESH))
    assert off.ages() == {}
    topology = parse_topology(_with_heartbeats(MESH), source="mesh.json")
    book = HeartbeatBook()
    assert watch_paths(book, topology)
    expected = {(p.origin, p.target) for p in heartbeat_paths(topology)}
    assert set(book.ages()) == expected
    assert set(book.ages().values()) == {None}

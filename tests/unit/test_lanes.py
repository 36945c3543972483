"""Outages and poison: one lane per target for fan-out tasks, delivery counts sized from the
outage tolerance, and a parking queue for every Service Bus task."""

from __future__ import annotations

import copy
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from replication.exceptions import ConfigurationError
from replication.hosts.functions import build_app
from replication.topology import (
    PARKING_QUEUE,
    EntityRef,
    Topology,
    bounded,
    load_topology,
    longest_outage_tolerance,
    materialize,
    parse_topology,
    required_delivery_count,
    sql_texts,
)

ROOT = Path(__file__).resolve().parents[2]
MESH = ROOT / "examples" / "three-region-mesh.json"


def _servicebus(name: str, **entities: Any) -> dict[str, Any]:
    return {
        "name": name,
        "region": name,
        "kind": "servicebus",
        "fullyQualifiedNamespace": f"{name}.servicebus.windows.net",
        "connection": f"SB_{name.upper()}",
        "topics": [{"name": "orders"}],
        **entities,
    }


def _mesh(**task: Any) -> dict[str, Any]:
    """Three Service Bus namespaces; one task from weu to the two others (overridable)."""
    return {
        "namespaces": [_servicebus("weu"), _servicebus("neu"), _servicebus("eus")],
        "tasks": [
            {
                "name": "orders-from-weu",
                "pattern": "all_active",
                "source": {"namespace": "weu", "entity": "orders", "subscription": "replication"},
                "targets": [
                    {"namespace": "neu", "entity": "orders"},
                    {"namespace": "eus", "entity": "orders"},
                ],
                **task,
            }
        ],
    }


def _stream(**task: Any) -> dict[str, Any]:
    """An event hub ``devices`` (consumer group ``$Default``) streamed to queues of ``weu``."""
    hub = {
        "name": "ingest",
        "region": "weu",
        "kind": "eventhubs",
        "fullyQualifiedNamespace": "ingest.servicebus.windows.net",
        "connection": "EH",
        "eventHubs": [{"name": "devices"}],
    }
    queues = [{"name": "a"}, {"name": "b"}, {"name": "rejected"}]
    source = {"namespace": "ingest", "entity": "devices", "consumerGroup": "$Default"}
    return {
        "namespaces": [hub, _servicebus("weu", queues=queues)],
        "tasks": [{"name": "devices", "pattern": "stream_to_queue", "source": source, **task}],
    }


def _subscriptions(topology: Topology, namespace: str, topic: str = "orders") -> dict[str, Any]:
    (found,) = [t for t in materialize(topology).namespace(namespace).topics if t.name == topic]
    return {s.name: s for s in found.subscriptions}


# --- lanes -------------------------------------------------------------------------------


def test_a_fan_out_task_runs_as_one_lane_per_target() -> None:
    topology = load_topology(MESH)
    lanes = topology.lanes("telemetry-from-weu")
    assert [lane.name for lane in lanes] == [
        "telemetry-from-weu-to-eus",
        "telemetry-from-weu-to-sea",
    ]
    for lane, target in zip(lanes, ["eus", "sea"], strict=True):
        assert lane.lane_of == "telemetry-from-weu"
        assert lane.spec.source.subscription == f"replication-to-{target}"
        assert [t.namespace for t in lane.spec.targets] == [target]
        assert [t.namespace for t in lane.context.targets] == [target]
        assert lane.context.task_name == lane.name
        assert topology.task(lane.name) == lane.spec
    assert len(topology.tasks) == 6
    with pytest.raises(KeyError):
        topology.task("telemetry-from-weu")


def test_a_task_with_one_target_is_its_own_only_lane() -> None:
    topology = load_topology(ROOT / "examples" / "two-region-all-active.json")
    (task,) = topology.lanes("orders-weu-to-neu")
    assert task.lane_of is None
    assert task.spec.source.subscription == "replication"


def test_each_lane_subscription_gets_the_pattern_rule_and_no_one_reads_the_old_one() -> None:
    subscriptions = _subscriptions(load_topology(MESH), "weu", "telemetry")
    assert sorted(subscriptions) == ["dashboard", "replication-to-eus", "replication-to-sea"]
    for name in ("replication-to-eus", "replication-to-sea"):
        (rule,) = subscriptions[name].rules
        assert (rule.name, rule.filter.sql, rule.action) == (
            "$Default",
            "replication IS NULL",
            "SET replication = 1",
        )


def test_the_function_app_registers_one_function_per_lane() -> None:
    app = build_app(load_topology(MESH), environ={})
    bindings = {
        str(f.get_function_name()): json.loads(f.get_function_json())["bindings"][0]
        for f in app.get_functions()
    }
    assert len(bindings) == 6
    assert bindings["telemetry-from-eus-to-sea"]["subscriptionName"] == "replication-to-sea"
    assert bindings["telemetry-from-eus-to-sea"]["topicName"] == "telemetry"


def test_per_message_patterns_and_queue_sources_keep_one_reader() -> None:
    routing = _mesh(
        pattern="routing",
        options={"routes": [{"condition": "1=1", "targets": ["neu/orders", "eus/orders"]}]},
    )
    assert [t.name for t in parse_topology(routing).tasks] == ["orders-from-weu"]
    queue = _mesh(source={"namespace": "weu", "entity": "jobs"})
    queue["namespaces"][0]["queues"] = [{"name": "jobs"}]
    assert [t.name for t in parse_topology(queue).tasks] == ["orders-from-weu"]


def test_a_declared_replication_subscription_is_the_template_of_its_lanes() -> None:
    document = _mesh()
    document["namespaces"][0]["topics"] = [
        {"name": "orders", "subscriptions": [{"name": "replication", "lockDuration": "PT5M"}]}
    ]
    topology = parse_topology(document)
    subscriptions = _subscriptions(topology, "weu")
    assert sorted(subscriptions) == ["replication-to-eus", "replication-to-neu"]
    lane = topology.lanes("orders-from-weu")[0].spec
    # A 5-minute lock gives 4-minute attempts: a 1-hour outage costs 15 deliveries (+10).
    assert required_delivery_count(topology, lane) == 25
    for subscription in subscriptions.values():
        assert subscription.lock_duration == timedelta(minutes=5)
        assert subscription.max_delivery_count == 25


def test_event_hub_lanes_read_their_own_consumer_groups_except_on_basic() -> None:
    document = _stream(
        targets=[{"namespace": "weu", "entity": "a"}, {"namespace": "weu", "entity": "b"}],
        deadLetterTarget={"namespace": "weu", "entity": "rejected"},
    )
    topology = parse_topology(document)
    # Both targets are in one namespace: the entity names the lane.
    assert [t.name for t in topology.tasks] == ["devices-to-weu-a", "devices-to-weu-b"]
    groups = [t.source.consumer_group for t in topology.tasks]
    assert groups == ["Default-to-weu-a", "Default-to-weu-b"]
    (hub,) = materialize(topology).namespace("ingest").event_hubs
    assert hub.consumer_groups == groups
    basic = copy.deepcopy(document)
    basic["namespaces"][0]["sku"] = "Basic"
    assert [t.name for t in parse_topology(basic).tasks] == ["devices"]


def test_long_names_are_shortened_deterministically_and_stay_distinct() -> None:
    subscription = "s" * 45
    topology = parse_topology(
        _mesh(source={"namespace": "weu", "entity": "orders", "subscription": subscription})
    )
    names = [str(t.source.subscription) for t in topology.tasks]
    assert all(len(name) <= 50 for name in names)
    assert len(set(names)) == 2
    assert names == [bounded(f"{subscription}-to-neu", 50), bounded(f"{subscription}-to-eus", 50)]
    assert bounded("short", 50) == "short"
    assert bounded("x" * 60, 50) == bounded("x" * 60, 50) != bounded("x" * 61, 50)


def test_a_lane_cannot_take_a_declared_subscription() -> None:
    document = _mesh()
    document["namespaces"][0]["topics"] = [
        {"name": "orders", "subscriptions": [{"name": "replication-to-neu"}]}
    ]
    with pytest.raises(ConfigurationError, match=r"tasks\[0\]\.source\.subscription: lane "):
        parse_topology(document, source="t.json")


def test_a_lane_cannot_take_another_task_name() -> None:
    document = _mesh()
    document["tasks"].append(
        {
            "name": "orders-from-weu-to-neu",
            "pattern": "all_active",
            "source": {"namespace": "neu", "entity": "orders", "subscription": "replication"},
            "targets": [{"namespace": "weu", "entity": "orders"}],
        }
    )
    with pytest.raises(
        ConfigurationError, match=r"tasks\[1\]\.name: task 'orders-from-weu-to-neu'"
    ):
        parse_topology(document, source="t.json")


def test_sql_texts_name_the_file_task_once_per_task() -> None:
    wheres = {text.where for text in sql_texts(load_topology(MESH))}
    assert wheres == {"tasks[0].pattern", "tasks[1].pattern", "tasks[2].pattern"}


# --- delivery counts ---------------------------------------------------------------------


def test_replication_subscriptions_get_the_delivery_count_the_tolerance_needs() -> None:
    topology = load_topology(MESH)
    subscriptions = _subscriptions(topology, "weu", "telemetry")
    # 1 h tolerance / 48 s attempts (80 % of the 1-minute lock) = 75, plus 10 headroom.
    assert subscriptions["replication-to-eus"].max_delivery_count == 85
    assert subscriptions["dashboard"].max_delivery_count == 10
    shorter = parse_topology(_mesh(retry={"outageTolerance": "PT10M"}))
    assert _subscriptions(shorter, "weu")["replication-to-neu"].max_delivery_count == 23


def test_the_longest_outage_tolerance_is_the_longest_of_the_tasks() -> None:
    """What the streaming duplicate audit's watermark defaults to (spark/README.md)."""
    assert longest_outage_tolerance(parse_topology(_mesh())) == timedelta(hours=1)
    document = _mesh(retry={"outageTolerance": "PT3H"})
    second = copy.deepcopy(document["tasks"][0])
    second.update(name="orders-from-neu", retry={"outageTolerance": "PT10M"})
    second["source"] = {**second["source"], "namespace": "neu"}
    second["targets"] = [{"namespace": "weu", "entity": "orders"}]
    document["tasks"].append(second)
    assert longest_outage_tolerance(parse_topology(document)) == timedelta(hours=3)
    no_tasks = {"namespaces": [_servicebus("weu")]}
    assert longest_outage_tolerance(parse_topology(no_tasks)) == timedelta(hours=1)


def test_an_explicit_delivery_count_is_kept_when_it_is_large_enough() -> None:
    document = _mesh()
    document["namespaces"][0]["topics"] = [
        {"name": "orders", "subscriptions": [{"name": "replication", "maxDeliveryCount": 500}]}
    ]
    subscriptions = _subscriptions(parse_topology(document), "weu")
    assert {s.max_delivery_count for s in subscriptions.values()} == {500}


def test_an_explicit_delivery_count_below_the_tolerance_is_refused() -> None:
    document = _mesh()
    document["namespaces"][0]["topics"] = [
        {"name": "orders", "subscriptions": [{"name": "replication", "maxDeliveryCount": 12}]}
    ]
    with pytest.raises(ConfigurationError) as caught:
        parse_topology(document, source="t.json")
    assert str(caught.value) == (
        "t.json: namespaces[0].topics[0].subscriptions[0].maxDeliveryCount: 12 deliveries ride "
        "out 0:01:36 of target outage, but task 'orders-from-weu' has retry.outageTolerance "
        "1:00:00 and needs 85 (raise it, or lower the tolerance)"
    )


def test_queue_sources_are_sized_too_but_dead_letter_queue_sources_are_not() -> None:
    document = _mesh(source={"namespace": "weu", "entity": "jobs"})
    document["namespaces"][0]["queues"] = [{"name": "jobs"}]
    (queue,) = [
        q for q in materialize(parse_topology(document)).namespace("weu").queues if q.name == "jobs"
    ]
    assert queue.max_delivery_count == 85
    spill = _mesh(
        source={"namespace": "weu", "entity": "jobs", "deadLetterQueue": True}, pattern="spillover"
    )
    spill["namespaces"][0]["queues"] = [{"name": "jobs", "maxDeliveryCount": 3}]
    (queue,) = [
        q for q in materialize(parse_topology(spill)).namespace("weu").queues if q.name == "jobs"
    ]
    assert queue.max_delivery_count == 3


def test_a_subscription_without_a_pattern_rule_keeps_its_own_rules() -> None:
    document = _mesh(
        pattern="routing",
        options={"routes": [{"condition": "1=1", "targets": ["neu/orders"]}]},
        targets=[{"namespace": "neu", "entity": "orders"}],
    )
    rule = {"name": "only-eu", "filter": {"sql": "region = 'eu'"}}
    document["namespaces"][0]["topics"] = [
        {"name": "orders", "subscriptions": [{"name": "replication", "rules": [rule]}]}
    ]
    (kept,) = _subscriptions(parse_topology(document), "weu")["replication"].rules
    assert kept.name == "only-eu"


# --- parking -----------------------------------------------------------------------------


def test_every_servicebus_task_parks_in_its_source_namespace_by_default() -> None:
    topology = load_topology(MESH)
    for task in topology.tasks:
        assert task.dead_letter_target == EntityRef(
            namespace=task.source.namespace, entity=PARKING_QUEUE
        )
    for namespace in materialize(topology).namespaces:
        parked = [q for q in namespace.queues if q.name == PARKING_QUEUE]
        assert len(parked) == 1, namespace.name


def test_an_explicit_dead_letter_target_is_kept_and_a_declared_parking_queue_not_repeated() -> None:
    document = _mesh(deadLetterTarget={"namespace": "weu", "entity": "rejected"})
    document["namespaces"][0]["queues"] = [{"name": "rejected"}, {"name": PARKING_QUEUE}]
    topology = parse_topology(document)
    assert {str(t.dead_letter_target.entity) for t in topology.tasks if t.dead_letter_target} == {
        "rejected"
    }
    names = [q.name for q in materialize(topology).namespace("weu").queues]
    assert names == ["rejected", PARKING_QUEUE]


def test_event_hub_sources_still_need_an_explicit_dead_letter_target() -> None:
    document = _stream(targets=[{"namespace": "weu", "entity": "a"}])
    with pytest.raises(ConfigurationError, match=r"tasks\[0\]\.deadLetterTarget"):
        parse_topology(document)

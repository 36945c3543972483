"""One contract, every pattern: what the runtime relies on, whatever the pattern does.

- an empty batch gives no decisions;
- every input message is accounted for by at least one decision;
- the input envelopes are never mutated;
- a forwarded replica keeps the MessageId and body of its source and is stamped for its target.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from replication.envelope import Envelope
from replication.planning import PATTERN_NAMES, Forward, Target, TaskContext, load_pattern
from replication.properties import read_state
from replication.rules import RuleSpec, rule_texts

OPTIONS: dict[str, dict[str, Any]] = {
    "all_active": {},
    "active_passive": {"replicaTimeToLive": "PT2M"},
    "spillover": {"replicaTimeToLive": 60},
    "latency_optimization": {},
    "stream_to_queue": {},
    "consolidation": {"setProperties": {"region": "weu"}, "renameProperties": {"k": "kind"}},
    "validation": {"condition": "kind = 'order' OR k = 'order'", "removeProperties": ["secret"]},
    "routing": {"routes": [{"condition": "k = 'order'", "targets": ["neu/orders"]}]},
}

CONTEXT = TaskContext(
    task_name="t",
    source_namespace="weu",
    targets=(Target("neu", "orders"), Target("eus", "orders")),
    max_hops=2,
)


def batch() -> list[Envelope]:
    enqueued = datetime(2024, 1, 1, tzinfo=UTC)
    return [
        Envelope(
            body=f"body-{i}".encode(),
            message_id=f"m-{i}",
            enqueued_time_utc=enqueued,
            sequence_number=i,
            application_properties={"k": "order" if i % 2 else "other", "secret": "x"},
        )
        for i in range(6)
    ] + [
        Envelope(
            body=b"replica",
            message_id="m-replica",
            application_properties={"repl-origin": "neu", "repl-path": "neu;weu", "repl-hops": 1},
        ),
        Envelope(body=b"bad", message_id="m-bad", application_properties={"repl-hops": "many"}),
    ]


def test_every_registered_pattern_is_covered() -> None:
    assert sorted(OPTIONS) == sorted(PATTERN_NAMES)


@pytest.fixture(params=PATTERN_NAMES)
def pattern_and_options(request: pytest.FixtureRequest) -> tuple[Any, Any]:
    pattern = load_pattern(request.param)
    return pattern, pattern.options_model.model_validate(OPTIONS[request.param])


def test_empty_batch_gives_no_decisions(pattern_and_options: tuple[Any, Any]) -> None:
    pattern, options = pattern_and_options
    assert pattern.plan([], CONTEXT, options) == []


def test_every_input_is_accounted_for(pattern_and_options: tuple[Any, Any]) -> None:
    pattern, options = pattern_and_options
    inputs = batch()
    decisions = pattern.plan(inputs, CONTEXT, options)
    assert {id(d.source) for d in decisions} == {id(e) for e in inputs}


def test_inputs_are_not_mutated(pattern_and_options: tuple[Any, Any]) -> None:
    pattern, options = pattern_and_options
    inputs = batch()
    before = copy.deepcopy(inputs)
    pattern.plan(inputs, CONTEXT, options)
    assert inputs == before


def test_replicas_keep_message_id_and_body(pattern_and_options: tuple[Any, Any]) -> None:
    pattern, options = pattern_and_options
    forwards = [d for d in pattern.plan(batch(), CONTEXT, options) if isinstance(d, Forward)]
    assert forwards
    for forward in forwards:
        assert forward.envelope.message_id == forward.source.message_id
        assert forward.envelope.body == forward.source.body
        state = read_state(forward.envelope.application_properties)
        assert state.path[-1] == forward.target.namespace
        assert forward.target in CONTEXT.targets


def test_malformed_replication_properties_are_dead_lettered_not_dropped(
    pattern_and_options: tuple[Any, Any],
) -> None:
    pattern, options = pattern_and_options
    bad = batch()[-1]
    decisions = pattern.plan([bad], CONTEXT, options)
    assert decisions
    assert all(type(d).__name__ in {"DeadLetter", "Skip"} for d in decisions)


@pytest.mark.parametrize("time_to_live", ["PT1S", "PT2M", "P1D", "P10DT3H4M5S", 59.5])
def test_a_patterns_subscription_rule_is_one_service_bus_accepts(
    pattern_and_options: tuple[Any, Any], time_to_live: object
) -> None:
    """The patterns build their rules without parsing them (the local host's start-up does
    without the SQL parser): validated here as a topology file's rule is, texts parsed."""
    pattern, options = pattern_and_options
    if "replica_time_to_live" in type(options).model_fields:
        options = options.model_copy(
            update={
                "replica_time_to_live": options.model_validate(
                    {"replicaTimeToLive": time_to_live}
                ).replica_time_to_live
            }
        )
    rule = pattern.subscription_rule(options)
    if rule is None:
        return
    assert RuleSpec.model_validate(rule.model_dump()) == rule
    assert [text.problem() for text in rule_texts(rule, "filter", "action")] == [None, None]

"""User transforms in the runner: every pattern, and the faults the issue names, message by message.

The runner is the real one; targets are ``MemoryTarget`` s, the in-memory transport (a real
sender that keeps what it gets), so that a batch of 100 can be followed message by message: each
fault test ends with the right messages parked (with their reason), every other message
replicated exactly once with its replication properties stamped from what it carried when it was
received (no loop), and nothing lost. The same four faults on the emulator through the local
host are ``tests/faults/test_transforms.py``; a user's app through the real Functions worker is
``tests/host/test_user_app.py``.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from replication.envelope import Envelope
from replication.planning import Target
from replication.properties import (
    DEAD_LETTER_ERROR_DESCRIPTION,
    DEAD_LETTER_REASON,
    REPL_HOPS,
    REPL_ORIGIN,
    REPL_PATH,
    is_replication_property,
)
from replication.runtime import BatchOutcome, MemoryTarget, RetryPolicy, TaskRunner
from replication.telemetry import TaskTelemetry
from replication.topology import parse_topology
from replication.transforms import RejectMessage, SkipMessage, Transforms
from tests.otel import Sdk

ROOT = Path(__file__).resolve().parents[2]
NEU = Target("neu", "orders")
NEU_OTHER = Target("neu", "other")


def topology(
    pattern: str, options: dict[str, Any], *, timeout: str = "PT10S", source: str = "orders"
) -> dict[str, Any]:
    return {
        "namespaces": [
            {
                "name": "weu",
                "region": "westeurope",
                "kind": "servicebus",
                "fullyQualifiedNamespace": "weu.servicebus.windows.net",
                "connection": "SB_WEU",
                "queues": [{"name": "orders"}, {"name": "parked"}],
            },
            {
                "name": "neu",
                "region": "northeurope",
                "kind": "servicebus",
                "fullyQualifiedNamespace": "neu.servicebus.windows.net",
                "connection": "SB_NEU",
                "queues": [{"name": "orders"}, {"name": "other"}],
            },
            {
                "name": "eus",
                "region": "eastus",
                "kind": "servicebus",
                "fullyQualifiedNamespace": "eus.servicebus.windows.net",
                "connection": "SB_EUS",
            },
        ],
        "tasks": [
            {
                "name": "t",
                "pattern": pattern,
                "source": {"namespace": "weu", "entity": source},
                "targets": [
                    {"namespace": "neu", "entity": "orders"},
                    {"namespace": "neu", "entity": "other"},
                ]
                if pattern == "routing"
                else [{"namespace": "neu", "entity": "orders"}],
                "deadLetterTarget": {"namespace": "weu", "entity": "parked"},
                "transform": {"function": "user", "timeout": timeout},
                "options": options,
            }
        ],
    }


class Run:
    """A runner for one task whose transform is ``function``, and what it sent and parked."""

    def __init__(
        self,
        function: Callable[..., Any],
        pattern: str = "consolidation",
        options: dict[str, Any] | None = None,
        *,
        timeout: str = "PT10S",
        budget: float = 0.0,
        sdk: Sdk | None = None,
        target: MemoryTarget | None = None,
    ) -> None:
        transforms = Transforms()
        transforms.register("user")(function)
        loaded = parse_topology(
            topology(pattern, options or {}, timeout=timeout), transforms=transforms
        )
        task = loaded.resolved("t")
        self.targets = {
            NEU: target or MemoryTarget("neu/orders"),
            NEU_OTHER: MemoryTarget("neu/other"),
        }
        self.parked = MemoryTarget("weu/parked")
        telemetry = None
        if sdk is not None:
            telemetry = TaskTelemetry(
                "t",
                source_namespace="weu",
                source_entity="orders",
                meter_provider=sdk.meters,
                tracer_provider=sdk.tracers,
            )
        self.runner = TaskRunner(
            task,
            {t: s for t, s in self.targets.items() if t in task.context.targets},
            self.parked,
            retry=RetryPolicy(min_backoff=0.01, max_backoff=0.01, budget=budget),
            telemetry=telemetry,
        )

    def run(self, batch: list[Envelope]) -> BatchOutcome:
        return self.runner.run(batch)

    @property
    def sent(self) -> list[Envelope]:
        return self.targets[NEU].received

    def parked_reasons(self) -> dict[str, tuple[str, str]]:
        return {
            str(p.message_id): (
                p.application_properties[DEAD_LETTER_REASON],
                p.application_properties[DEAD_LETTER_ERROR_DESCRIPTION],
            )
            for p in self.parked.received
        }


def batch(count: int = 100, **properties: object) -> list[Envelope]:
    return [
        Envelope(
            body=json.dumps({"n": n}).encode(),
            message_id=f"m-{n}",
            sequence_number=n + 1,
            source="weu/orders",
            application_properties={"n": n, **properties},
        )
        for n in range(count)
    ]


def assert_accounted(run: Run, sent: list[Envelope], parked: set[str], count: int = 100) -> None:
    """Nothing lost, nothing twice: every message is either replicated once or parked once."""
    ids = [str(e.message_id) for e in sent]
    assert len(ids) == len(set(ids)), "a message was sent twice"
    assert set(run.parked_reasons()) == parked
    assert set(ids) | parked == {f"m-{n}" for n in range(count)}
    assert not set(ids) & parked


def upper(message: Envelope) -> Envelope:
    return message.replace(body=message.body.upper()).with_properties({"seen": True})


# -- the four faults, in a batch of 100 ------------------------------------------------------


def test_an_exception_parks_that_message_alone_with_its_type_and_message() -> None:
    def boom(message: Envelope) -> Envelope:
        if message.message_id == "m-37":
            raise ValueError("no price for sku 37")
        return upper(message)

    sdk = Sdk()
    run = Run(boom, sdk=sdk)
    outcome = run.run(batch())
    assert (outcome.forwarded, len(outcome.dead_lettered)) == (99, 1)
    assert run.parked_reasons() == {
        "m-37": ("TransformFailed", "transform user: ValueError: no price for sku 37")
    }
    assert_accounted(run, run.sent, {"m-37"})
    assert all(e.body.startswith(b'{"N"') and e.application_properties["seen"] for e in run.sent)
    assert sdk.messages()[("dead_lettered", "weu/parked", "TransformFailed")] == 1
    # The parked copy is the message as received, not a transformed one.
    (copy,) = run.parked.received
    assert copy.body == b'{"n": 37}'


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Lets hung transform threads finish once the test is over."""
    event = threading.Event()
    yield event
    event.set()


def test_a_call_that_hangs_is_parked_after_its_timeout_and_the_batch_goes_on(
    release: threading.Event,
) -> None:
    def hangs(message: Envelope) -> Envelope:
        if message.message_id == "m-5":
            release.wait(60)
        return message

    run = Run(hangs, timeout="PT0.5S", budget=30)
    started = time.monotonic()
    outcome = run.run(batch())
    assert time.monotonic() - started < 10
    assert (outcome.forwarded, len(outcome.dead_lettered)) == (99, 1)
    reason, description = run.parked_reasons()["m-5"]
    assert (reason, description) == (
        "TransformFailed",
        "transform user: did not return within 0.5 s (the task's transform.timeout)",
    )
    assert_accounted(run, run.sent, {"m-5"})
    # Order is kept around the hung call.
    assert [e.message_id for e in run.sent][:6] == ["m-0", "m-1", "m-2", "m-3", "m-4", "m-6"]


def test_calls_that_keep_hanging_are_bounded_by_the_batch_budget(release: threading.Event) -> None:
    def always_hangs(message: Envelope) -> Envelope:
        if message.message_id != "m-0":
            release.wait(60)
        return message

    run = Run(always_hangs, timeout="PT0.4S", budget=2.0)  # transforms get half: 1 s
    started = time.monotonic()
    outcome = run.run(batch(10))
    assert time.monotonic() - started < 5
    assert [e.message_id for e in run.sent] == ["m-0"]
    assert outcome.forwarded == 1
    reasons = run.parked_reasons()
    assert set(reasons) == {f"m-{n}" for n in range(1, 10)}
    descriptions = [d for _, d in reasons.values()]
    assert sum("within 0.4 s" in d for d in descriptions) >= 1
    assert any("time budget for transforms ran out" in d for d in descriptions)
    assert_accounted(run, run.sent, set(reasons), count=10)


def test_a_transform_that_strips_replication_properties_is_parked_not_sent() -> None:
    def strips(message: Envelope) -> Envelope:
        if message.message_id == "m-9":
            keep = {
                k: v
                for k, v in message.application_properties.items()
                if not is_replication_property(k)
            }
            return message.replace(application_properties=keep)
        return upper(message)

    replicated: dict[str, object] = {REPL_ORIGIN: "eus", REPL_PATH: "eus;weu", REPL_HOPS: 1}
    arriving = batch(100, **replicated)
    run = Run(strips)
    outcome = run.run(arriving)
    assert outcome.forwarded == 99
    reason, description = run.parked_reasons()["m-9"]
    assert reason == "TransformFailed"
    assert "changed replication properties (-repl-hops, -repl-origin, -repl-path)" in description
    assert_accounted(run, run.sent, {"m-9"})
    # No loop: every replica's path continues the one it arrived with.
    for replica in run.sent:
        props = replica.application_properties
        assert (props[REPL_ORIGIN], props[REPL_PATH], props[REPL_HOPS]) == ("eus", "eus;weu;neu", 2)


def test_garbage_results_are_parked_with_what_came_back() -> None:
    def garbage(message: Envelope) -> Any:
        n = message.application_properties["n"]
        return {3: None, 4: 42, 5: [], 6: [message, "x"], 7: SkipMessage("")}.get(n, message)

    run = Run(garbage)
    outcome = run.run(batch())
    assert outcome.forwarded == 95
    reasons = run.parked_reasons()
    assert {k: v[0] for k, v in reasons.items()} == {
        f"m-{n}": "TransformFailed" for n in (3, 4, 5, 6, 7)
    }
    assert "returned None" in reasons["m-3"][1]
    assert "returned int 42" in reasons["m-4"][1]
    assert "empty list" in reasons["m-5"][1]
    assert "element 1 is str" in reasons["m-6"][1]
    assert_accounted(run, run.sent, {f"m-{n}" for n in (3, 4, 5, 6, 7)})


# -- async def -------------------------------------------------------------------------------


def test_async_transforms_run_concurrently_keep_order_and_are_cancelled_when_late() -> None:
    active, most = 0, 0

    async def lookup(message: Envelope) -> Envelope:
        nonlocal active, most
        n = message.application_properties["n"]
        active += 1
        most = max(most, active)
        try:
            if n == 12:
                await asyncio.sleep(30)
            if n == 13:
                raise KeyError("sku-13")
            await asyncio.sleep(0.05)
            return message.with_properties({"looked-up": n})
        finally:
            active -= 1

    run = Run(lookup, timeout="PT0.5S")
    started = time.monotonic()
    outcome = run.run(batch(50))
    # Up to 16 calls at a time (counted, not timed: the fast tier shares a loaded machine),
    # and the one that hangs is cancelled at its timeout instead of holding the batch 30 s.
    assert 1 < most <= 16
    assert time.monotonic() - started < 15
    assert outcome.forwarded == 48
    reasons = run.parked_reasons()
    assert (
        reasons["m-12"][1]
        == "transform user: did not return within 0.5 s (the task's transform.timeout)"
    )
    assert reasons["m-13"][1] == "transform user: KeyError: 'sku-13'"
    assert [e.application_properties["looked-up"] for e in run.sent] == [
        n for n in range(50) if n not in (12, 13)
    ]
    assert_accounted(run, run.sent, {"m-12", "m-13"}, count=50)


def test_an_async_transform_that_blocks_its_loop_fails_only_what_it_held_up() -> None:
    async def blocks(message: Envelope) -> Envelope:
        if message.message_id == "m-1":
            time.sleep(2.5)  # a blocking call inside async def
        return message

    run = Run(blocks, timeout="PT0.5S")
    outcome = run.run(batch(3))
    assert outcome.forwarded + len(outcome.dead_lettered) == 3
    assert "m-1" in run.parked_reasons()
    assert "blocked its event loop" in run.parked_reasons()["m-1"][1]
    # The stage starts a new loop: the next batch is transformed normally.
    again = Run(blocks, timeout="PT0.5S")
    assert again.run(batch(1)).forwarded == 1


# -- verdicts, splits, and every pattern ---------------------------------------------------


def test_skip_and_reject_settle_or_park_the_message() -> None:
    def judge(message: Envelope) -> Any:
        n = message.application_properties["n"]
        if n == 1:
            return SkipMessage("test traffic")
        if n == 2:
            return RejectMessage("customer 2 is blocked")
        return message

    sdk = Sdk()
    run = Run(judge, sdk=sdk)
    outcome = run.run(batch(4))
    assert (outcome.forwarded, outcome.skipped) == (2, 1)
    assert run.parked_reasons() == {"m-2": ("TransformRejected", "customer 2 is blocked")}
    assert sdk.messages()[("skipped", "", "TransformSkipped")] == 1


def test_a_split_sends_each_part_once_even_across_redeliveries() -> None:
    def split(message: Envelope) -> list[Envelope]:
        return [message.replace(body=part.encode()) for part in ("a", "b", "c")]

    flaky = MemoryTarget("neu/orders", accept_per_call=4)
    run = Run(split, target=flaky)
    with pytest.raises(Exception, match="connection lost"):
        run.run(batch(2))
    run.run(batch(2))  # the redelivery sends only what was not acknowledged
    ids = [str(e.message_id) for e in flaky.received]
    assert sorted(ids) == ["m-0/1", "m-0/2", "m-0/3", "m-1/1", "m-1/2", "m-1/3"]


def mask(message: Envelope) -> Envelope:
    document = json.loads(message.body)
    document["card"] = "****" + document["card"][-4:]
    return message.replace(body=json.dumps(document).encode())


def test_validation_judges_the_transformed_body_and_parks_the_original() -> None:
    schema = {
        "type": "object",
        "required": ["card"],
        "properties": {"card": {"type": "string", "pattern": "^\\*+[0-9]{4}$"}},
    }
    cards = [
        Envelope(
            body=json.dumps({"card": card}).encode(), message_id=f"c-{i}", sequence_number=i + 1
        )
        for i, card in enumerate(["4111111111111111", "12"])
    ]
    run = Run(mask, "validation", {"bodySchema": schema})
    outcome = run.run(cards)
    assert [json.loads(e.body) for e in run.sent] == [{"card": "****1111"}]
    assert outcome.forwarded == 1
    reason, description = run.parked_reasons()["c-1"]
    assert reason == "ValidationFailed"
    assert "bodySchema" in description
    assert run.parked.received[0].body == b'{"card": "12"}'


def test_routing_routes_on_a_property_the_transform_computed() -> None:
    def country(message: Envelope) -> Envelope:
        return message.with_properties({"country": json.loads(message.body)["shipTo"]})

    options = {
        "mode": "first",
        "routes": [
            {"condition": "country = 'IE'", "targets": ["neu/orders"]},
            {"condition": "1 = 1", "targets": ["neu/other"]},
        ],
    }
    shipments = [
        Envelope(body=json.dumps({"shipTo": c}).encode(), message_id=c, sequence_number=i + 1)
        for i, c in enumerate(["IE", "FR"])
    ]
    run = Run(country, "routing", options)
    run.run(shipments)
    assert [e.message_id for e in run.targets[NEU].received] == ["IE"]
    assert [e.message_id for e in run.targets[NEU_OTHER].received] == ["FR"]


@pytest.mark.parametrize(
    ("pattern", "options"),
    [
        ("all_active", {}),
        ("active_passive", {"replicaTimeToLive": "PT2M"}),
        ("stream_to_queue", {}),
        ("consolidation", {"setProperties": {"region": "weu"}}),
        ("validation", {"requiredProperties": ["seen"]}),
        ("latency_optimization", {}),
    ],
)
def test_every_pattern_sends_the_transformed_replica_stamped_as_received(
    pattern: str, options: dict[str, Any]
) -> None:
    run = Run(upper, pattern, options)
    arriving = [
        *batch(3),
        Envelope(
            body=b"replica",
            message_id="r",
            sequence_number=99,
            application_properties={REPL_ORIGIN: "neu", REPL_PATH: "neu;weu", REPL_HOPS: 1},
        ),
    ]
    outcome = run.run(arriving)
    assert outcome.forwarded == 3
    for replica in run.sent:
        assert replica.body.startswith(b'{"N"')
        assert replica.application_properties["seen"] is True
        assert replica.application_properties[REPL_PATH] == "weu;neu"
    assert outcome.skipped == 1  # the replica from neu is not sent back: loop prevention


def test_the_readme_examples_do_what_the_readme_says() -> None:
    """The examples topology and its transforms (README): mask, enrich, route."""
    loaded = parse_topology(
        json.loads((ROOT / "examples" / "user-transforms.json").read_text()), source="examples"
    )

    def run(task: str, messages: list[Envelope]) -> tuple[dict[str, MemoryTarget], MemoryTarget]:
        resolved = loaded.resolved(task)
        targets = {t: MemoryTarget(str(t)) for t in resolved.context.targets}
        parked = MemoryTarget("parked")
        TaskRunner(resolved, dict(targets), parked).run(messages)
        return {str(t): s for t, s in targets.items()}, parked

    def message(n: int, body: object = None, **properties: object) -> Envelope:
        text = json.dumps(body).encode() if body is not None else b"not json"
        return Envelope(
            body=text, message_id=f"m-{n}", sequence_number=n, application_properties=properties
        )

    sent, parked = run(
        "orders-masked",
        [
            message(1, {"orderId": "o-1", "card": "4111111111111111"}),
            message(2),
            message(3, {"orderId": "o-3"}),
        ],
    )
    assert [json.loads(e.body) for e in sent["neu/orders"].received] == [
        {"orderId": "o-1", "card": "************1111"}
    ]
    assert [p.application_properties[DEAD_LETTER_REASON] for p in parked.received] == [
        "TransformRejected",
        "ValidationFailed",
    ]
    sent, parked = run(
        "sales-enriched",
        [message(1, {}, store="s-002"), message(2, {}, store="s-009"), message(3, {}, test=True)],
    )
    (enriched,) = sent["neu/sales"].received
    assert (
        enriched.application_properties["storeCity"],
        enriched.application_properties["region"],
    ) == (
        "Dublin",
        "weu",
    )
    assert [p.message_id for p in parked.received] == ["m-2"]
    sent, parked = run(
        "shipments-by-country",
        [message(1, {"shipTo": {"country": "ie"}}), message(2, {"shipTo": {"country": "FR"}})],
    )
    assert [e.message_id for e in sent["neu/shipments-ie"].received] == ["m-1"]
    assert [e.message_id for e in sent["neu/shipments-other"].received] == ["m-2"]

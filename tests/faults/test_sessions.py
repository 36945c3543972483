"""Order per session, end to end through the local host, across restarts of the replicator.

Service Bus keeps relative order only within a session, so ordered replication means sessions
at both ends: the replicator holds one session at a time per receive loop (several loops side
by side), sends each session's messages in order with the SessionId kept, and a failed or
interrupted batch goes back to the head of its session. Event Hubs keeps order per partition
key; a stream-to-queue replica's SessionId is the event's partition key, so each key becomes a
session at the target. Targets are read here with session receivers, as an ordered consumer
reads them. A copy re-sent after a crash has the same MessageId; the assertions are on the
first copy of each message, per session, and on completeness.
"""

from __future__ import annotations

import functools
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from azure.eventhub import EventData, EventHubProducerClient
from azure.servicebus import ServiceBusMessage

from replication.hosts.local import LocalHost

from .harness import Cluster, eventually, message_ids, replicator_process, topology_document

ARRIVAL_SECONDS = 180
"""How long the restarted replicator has to bring every message across."""


def _session_messages(prefix: str, sessions: int, per_session: int) -> list[ServiceBusMessage]:
    """Messages of ``sessions`` sessions, interleaved, numbered per session."""
    return [
        ServiceBusMessage(
            b"x",
            message_id=f"{prefix}{s}-{n}",
            session_id=f"{prefix}{s}",
            application_properties={"n": n},
        )
        for n in range(per_session)
        for s in range(sessions)
    ]


def _first_copies_in_order(sessions: dict[str, list[Any]]) -> dict[str, list[int]]:
    """Each session's numbers, first copy of each message only (asserted in order)."""
    numbers: dict[str, list[int]] = {}
    for session_id, messages in sessions.items():
        for message in messages:
            assert str(message.session_id) == session_id
        first = list(dict.fromkeys(int(m.application_properties[b"n"]) for m in messages))
        assert first == sorted(first), f"session {session_id} out of order: {first}"
        numbers[session_id] = first
    return numbers


def test_a_session_enabled_all_active_pair_keeps_order_per_session_across_a_kill(
    tmp_path: Path, figures: dict[str, Any]
) -> None:
    """Both directions of an all-active pair read session-enabled subscriptions: 8 sessions
    of 60 messages published at weu, 4 of 60 at neu, the replicator SIGKILLed after the first
    hundred replicas and started again. Every namespace's ordered consumer (the session-enabled
    ``posting`` subscription) then gets every session complete and in order, and nothing is
    replicated twice over (no loop)."""
    document = topology_document(
        ["weu", "neu"], [("weu", "neu"), ("neu", "weu")], sessions=True, lock="PT5S"
    )
    weu_messages = _session_messages("w", 8, 60)
    neu_messages = _session_messages("n", 4, 60)
    everything = {str(m.message_id) for m in weu_messages + neu_messages}
    with Cluster(document, tmp_path) as cluster:
        cluster.publish("weu", "orders", weu_messages)
        cluster.publish("neu", "orders", neu_messages)
        log = tmp_path / "replicator.log"
        with replicator_process(cluster, log) as first:
            eventually(
                lambda: cluster.count("neu", "orders", "audit") >= 240 + 100,
                timeout=90,
                what="the first replicas at neu",
            )
            first.send_signal(signal.SIGKILL)
            first.wait(timeout=10)
        with replicator_process(cluster, log):
            for namespace in ("weu", "neu"):
                try:
                    eventually(
                        functools.partial(_arrived, cluster, namespace, everything),
                        timeout=ARRIVAL_SECONDS,
                        what=f"every message at {namespace}",
                    )
                except AssertionError as error:
                    raise AssertionError(_why_not(cluster, namespace, everything, log)) from error
            eventually(lambda: _idle(cluster), timeout=60, what="the replication subscriptions")
        for namespace in ("weu", "neu"):
            sessions = cluster.drain_sessions(namespace, "orders", "posting")
            numbers = _first_copies_in_order(sessions)
            assert sorted(numbers) == sorted(
                {str(m.session_id) for m in weu_messages + neu_messages}
            )
            assert all(found == list(range(60)) for found in numbers.values())
            copies = message_ids([m for ms in sessions.values() for m in ms])
            assert set(copies) == everything
            figures[f"sessions all-active, replicator SIGKILLed: duplicates at {namespace}"] = sum(
                copies.values()
            ) - len(everything)
            assert cluster.peek(namespace, "replication-parked") == []


def _arrived(cluster: Cluster, namespace: str, expected: set[str]) -> bool:
    """A copy of every message is at ``namespace`` (its audit subscription, peeked; a copy sent
    again after the kill is not counted twice)."""
    return set(message_ids(cluster.peek(namespace, "orders", "audit"))) >= expected


def _why_not(cluster: Cluster, namespace: str, expected: set[str], log: Path) -> str:
    """What a failure of :func:`_arrived` needs to be diagnosed from a CI log: the messages
    still missing at ``namespace`` and the replicator's warnings and errors (it runs as its own
    process, so the harness's thread stacks show nothing of it). Once in many loaded full runs
    (2026-11-29) a message never arrived within :data:`ARRIVAL_SECONDS` after the restart."""
    missing = sorted(expected - set(message_ids(cluster.peek(namespace, "orders", "audit"))))
    complaints = [
        line for line in log.read_text(errors="replace").splitlines() if " INFO " not in line
    ]
    # A message delivered maxDeliveryCount times (each session turn that ends with messages
    # prefetched or a batch abandoned counts one) is dead-lettered in the source's subscription.
    dead_lettered = [
        f"{source}/orders/to-{namespace}: {m.message_id} ({m.dead_letter_reason}, "
        f"delivered {m.delivery_count} times)"
        for source in ("weu", "neu")
        if source != namespace
        for m in cluster.peek(source, "orders", f"to-{namespace}", dead_letter=True)
    ]
    return (
        f"{len(missing)} messages never reached {namespace} within {ARRIVAL_SECONDS} s: "
        f"{missing[:30]}\n"
        f"dead-lettered on the way: {dead_lettered[:30] or 'none'}\n"
        "the replicator's last warnings and errors:\n" + "\n".join(complaints[-40:])
    )


def _idle(cluster: Cluster) -> bool:
    """Nothing waits in the replication subscriptions (session-enabled: read by session)."""
    return all(
        not cluster.drain_sessions(source, "orders", f"to-{target}", idle=0.5)
        for source, target in (("weu", "neu"), ("neu", "weu"))
    )


def _stream_document() -> dict[str, Any]:
    return {
        "namespaces": [
            {
                "name": "ingest",
                "region": "westeurope",
                "kind": "eventhubs",
                "fullyQualifiedNamespace": "ingest.servicebus.windows.net",
                "connection": "EH_INGEST",
                "eventHubs": [
                    {"name": "meters", "partitionCount": 4, "consumerGroups": ["replication"]}
                ],
            },
            {
                "name": "weu",
                "region": "westeurope",
                "kind": "servicebus",
                "fullyQualifiedNamespace": "weu.servicebus.windows.net",
                "connection": "SB_WEU",
                "queues": [
                    {
                        "name": "meter-readings",
                        "requiresSession": True,
                        "requiresDuplicateDetection": True,
                    },
                    {"name": "meter-readings-rejected"},
                ],
            },
        ],
        "tasks": [
            {
                "name": "meters-to-queue",
                "pattern": "stream_to_queue",
                "source": {
                    "namespace": "ingest",
                    "entity": "meters",
                    "consumerGroup": "replication",
                },
                "targets": [{"namespace": "weu", "entity": "meter-readings"}],
                "deadLetterTarget": {"namespace": "weu", "entity": "meter-readings-rejected"},
                "retry": {"minBackoff": "PT0.2S", "maxBackoff": "PT1S"},
            }
        ],
    }


def _event(body: str, n: int) -> EventData:
    event = EventData(body)
    event.properties = {"n": n}
    return event


def _send_events(cluster: Cluster, keys: Sequence[str], per_key: int, start: int = 0) -> None:
    """``per_key`` events per partition key, numbered from ``start``, in batches of 10 per key."""
    producer = EventHubProducerClient.from_connection_string(
        cluster.nodes["ingest"].connection_string, eventhub_name="meters"
    )
    with producer:
        for first in range(start, start + per_key, 10):
            for key in keys:
                batch = producer.create_batch(partition_key=key)
                for n in range(first, min(first + 10, start + per_key)):
                    batch.add(_event(f"{key}:{n}", n))
                producer.send_batch(batch)


def test_stream_to_queue_turns_partition_keys_into_ordered_sessions_across_a_restart(
    tmp_path: Path,
) -> None:
    """Ten partition keys over four partitions, 60 events each, sent in two halves with the
    local host stopped and started again in between (no checkpoint store: the second host
    replays every partition and the target's duplicate detection drops the copies). At the
    session-enabled target queue each key is one session with its events complete and in
    order. Events without a partition key cannot become session messages: they are parked
    with reason ``SessionIdMissing`` and take nothing else with them."""
    keys = [f"meter-{k}" for k in range(10)]
    with Cluster(_stream_document(), tmp_path) as cluster:
        _send_events(cluster, keys, 30)
        with LocalHost(cluster.topology, cluster.environ) as host:
            assert host.wait_until_idle(2, timeout=120, at_least=300)
        _send_events(cluster, keys, 30, start=30)
        with EventHubProducerClient.from_connection_string(
            cluster.nodes["ingest"].connection_string, eventhub_name="meters"
        ) as producer:
            batch = producer.create_batch(partition_id="0")
            for n in range(3):
                batch.add(_event(f"keyless:{n}", n))
            producer.send_batch(batch)
        with LocalHost(cluster.topology, cluster.environ) as host:
            assert host.wait_until_idle(2, timeout=120, at_least=603)
        sessions = cluster.drain_sessions("weu", "meter-readings")
        parked = cluster.peek("weu", "meter-readings-rejected")
    numbers = _first_copies_in_order(sessions)
    assert sorted(numbers) == keys
    assert all(found == list(range(60)) for found in numbers.values())
    assert all(len(messages) == 60 for messages in sessions.values()), "a copy got through"
    assert sorted(str(next(iter(m.body)), "utf-8") for m in parked) == [
        f"keyless:{n}" for n in range(3)
    ]
    assert {m.application_properties[b"DeadLetterReason"] for m in parked} == {b"SessionIdMissing"}

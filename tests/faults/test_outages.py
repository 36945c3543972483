"""Target outages: nothing lost, nothing dead-lettered, healthy targets keep flowing.

Time is compressed: the replication subscriptions have 5-second locks (Service Bus's minimum),
so one invocation retries for 4 s (``attempt_budget``) before its batch is redelivered, and a
30-second outage costs about 8 deliveries where a real one of 30 minutes with 1-minute locks
costs about 38 (``docs/explanation/outages.md`` scales the argument). Each test states
the end state message by message: every MessageId published arrives, copies only under the
same MessageId, nothing in the source's dead-letter queue or the parking queue.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from replication.hosts.local import LocalHost

from .harness import (
    Cluster,
    eventually,
    hand_made_delivery_count,
    message_ids,
    originals,
    topology_document,
)

OUTAGE_SECONDS = 30


def _assert_nothing_dead_lettered(cluster: Cluster, source: str, subscription: str) -> None:
    assert cluster.peek(source, "orders", subscription, dead_letter=True) == []
    assert cluster.peek(source, "replication-parked") == []


def test_a_target_down_for_a_while_loses_nothing_and_dead_letters_nothing(
    tmp_path: Path, figures: dict[str, Any]
) -> None:
    document = topology_document(
        ["weu", "neu"], [("weu", "neu")], max_delivery_count=25, tolerance="PT1M"
    )
    with Cluster(document, tmp_path) as cluster:
        with LocalHost(cluster.topology, cluster.environ) as host:
            status = host.status["weu-to-neu"]
            cluster.publish("weu", "orders", originals("before", 100))
            eventually(lambda: status.messages >= 100, timeout=60, what="the first 100")
            cluster.nodes["neu"].kill()
            cluster.publish("weu", "orders", originals("during", 200))
            time.sleep(OUTAGE_SECONDS)
            assert status.failing, "the outage must show in the task's status"
            # Each attempt budget of 4 s ends in a redelivery, and the task keeps trying: how
            # many fit in the 30 s depends on the machine's load, so the outage lasts until five.
            eventually(lambda: status.failures >= 5, timeout=90, what="five failed attempts")
            cluster.nodes["neu"].start()
            drained = eventually(
                lambda: cluster.count("neu", "orders", "audit") >= 300,
                timeout=120,
                what="the backlog reaching neu",
            )
            eventually(lambda: not status.failing, timeout=30, what="the task recovering")
        copies = message_ids(cluster.peek("neu", "orders", "audit"))
        _assert_nothing_dead_lettered(cluster, "weu", "to-neu")
    expected = {f"before-{i}" for i in range(100)} | {f"during-{i}" for i in range(200)}
    assert set(copies) == expected  # lost 0, no copy under another MessageId
    figures["target outage 30 s: backlog of 200 drained after recovery (s)"] = round(drained, 1)
    figures["target outage 30 s: duplicates (same MessageId)"] = sum(copies.values()) - 300


def test_a_flapping_target_loses_nothing(tmp_path: Path, figures: dict[str, Any]) -> None:
    document = topology_document(
        ["weu", "neu"], [("weu", "neu")], max_delivery_count=25, tolerance="PT1M"
    )
    with Cluster(document, tmp_path) as cluster:
        with LocalHost(cluster.topology, cluster.environ):
            for round_ in range(3):
                cluster.publish("weu", "orders", originals(f"r{round_}", 60))
                time.sleep(2)
                cluster.nodes["neu"].kill()
                time.sleep(5)
                cluster.nodes["neu"].start()
            eventually(
                lambda: cluster.count("neu", "orders", "audit") >= 180,
                timeout=120,
                what="everything reaching neu",
            )
        copies = message_ids(cluster.peek("neu", "orders", "audit"))
        _assert_nothing_dead_lettered(cluster, "weu", "to-neu")
    assert set(copies) == {f"r{r}-{i}" for r in range(3) for i in range(60)}
    figures["flapping target (3 outages of 5 s): duplicates (same MessageId)"] = (
        sum(copies.values()) - 180
    )


def test_one_peer_down_does_not_hold_back_the_others(tmp_path: Path) -> None:
    document = topology_document(["weu", "neu", "sea"], [("weu", "neu"), ("weu", "sea")])
    with Cluster(document, tmp_path) as cluster:
        cluster.nodes["sea"].kill()
        with LocalHost(cluster.topology, cluster.environ) as host:
            cluster.publish("weu", "orders", originals("m", 150))
            eventually(
                lambda: cluster.count("neu", "orders", "audit") >= 150,
                timeout=60,
                what="neu receiving everything while sea is down",
            )
            eventually(lambda: host.status["weu-to-sea"].failing, timeout=30, what="sea failing")
            cluster.nodes["sea"].start()
            eventually(
                lambda: cluster.count("sea", "orders", "audit") >= 150,
                timeout=90,
                what="sea catching up",
            )
        expected = {f"m-{i}" for i in range(150)}
        assert set(message_ids(cluster.peek("neu", "orders", "audit"))) == expected
        assert set(message_ids(cluster.peek("sea", "orders", "audit"))) == expected
        _assert_nothing_dead_lettered(cluster, "weu", "to-sea")


def test_without_the_delivery_budget_an_outage_dead_letters_the_backlog(tmp_path: Path) -> None:
    """The control case: the same outage against a subscription deployed by hand with
    ``maxDeliveryCount`` 3 (what the topology's budget prevents). The messages land in the
    source's dead-letter queue, nowhere else; none is lost."""
    document = topology_document(["weu", "neu"], [("weu", "neu")])
    with Cluster(document, tmp_path, edit_config=hand_made_delivery_count(3)) as cluster:
        cluster.nodes["neu"].kill()
        with LocalHost(cluster.topology, cluster.environ):
            cluster.publish("weu", "orders", originals("m", 20))
            eventually(  # 3 deliveries of 4 s attempts each
                lambda: cluster.count("weu", "orders", "to-neu", dead_letter=True) >= 20,
                timeout=60,
                what="the backlog in the dead-letter queue",
            )
        dead = message_ids(cluster.peek("weu", "orders", "to-neu", dead_letter=True))
    assert set(dead) == {f"m-{i}" for i in range(20)}

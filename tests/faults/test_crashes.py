"""Crashes and hangs: the replicator killed mid-batch, a namespace killed or restarted under
it, a target that hangs longer than a lock, and a mesh whose subscription rules were replaced.

Targets here have no duplicate detection, so every copy a fault causes is counted: the tests
assert that none is lost and that copies exist only under the original MessageId, and report
how many there were.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import pytest

from replication.hosts.local import LocalHost

from .harness import (
    Cluster,
    eventually,
    message_ids,
    originals,
    replicator_process,
    topology_document,
)


def _assert_clean(cluster: Cluster, source: str, subscription: str) -> None:
    assert cluster.peek(source, "orders", subscription, dead_letter=True) == []
    assert cluster.peek(source, "replication-parked") == []


def test_a_replicator_killed_mid_batch_and_restarted_loses_nothing(
    tmp_path: Path, figures: dict[str, Any]
) -> None:
    document = topology_document(["weu", "neu"], [("weu", "neu")])
    with Cluster(document, tmp_path) as cluster:
        cluster.publish("weu", "orders", originals("m", 500, size=512))
        log = tmp_path / "replicator.log"
        with replicator_process(cluster, log) as first:
            eventually(
                lambda: cluster.count("neu", "orders", "audit") >= 100,
                timeout=60,
                what="the first replicas",
            )
            first.send_signal(signal.SIGKILL)
            first.wait(timeout=10)
        with replicator_process(cluster, log):
            eventually(
                lambda: len(set(message_ids(cluster.peek("neu", "orders", "audit")))) >= 500,
                timeout=120,
                what="every message after the restart",
            )
        copies = message_ids(cluster.peek("neu", "orders", "audit"))
        _assert_clean(cluster, "weu", "to-neu")
    assert set(copies) == {f"m-{i}" for i in range(500)}
    figures["replicator SIGKILLed mid-stream (500 messages): duplicates (same MessageId)"] = (
        sum(copies.values()) - 500
    )


@pytest.mark.parametrize("how", ["killed", "restarted"])
def test_a_source_namespace_killed_or_restarted_under_the_replicator(
    tmp_path: Path, how: str, figures: dict[str, Any]
) -> None:
    document = topology_document(["weu", "neu"], [("weu", "neu")])
    with Cluster(document, tmp_path) as cluster:
        cluster.publish("weu", "orders", originals("m", 400, size=512))
        with LocalHost(cluster.topology, cluster.environ) as host:
            eventually(
                lambda: host.status["weu-to-neu"].messages >= 50, timeout=60, what="progress"
            )
            source = cluster.nodes["weu"]
            if how == "killed":
                source.kill()
            else:
                source.stop()
            time.sleep(3)
            source.start()
            eventually(
                lambda: len(set(message_ids(cluster.peek("neu", "orders", "audit")))) >= 400,
                timeout=120,
                what="every message after the source came back",
            )
            eventually(lambda: not host.status["weu-to-neu"].failing, timeout=30, what="recovery")
        copies = message_ids(cluster.peek("neu", "orders", "audit"))
        _assert_clean(cluster, "weu", "to-neu")
    assert set(copies) == {f"m-{i}" for i in range(400)}
    figures[f"source namespace {how} mid-stream (400 messages): duplicates (same MessageId)"] = (
        sum(copies.values()) - 400
    )


def test_a_target_that_hangs_longer_than_a_lock_loses_nothing(
    tmp_path: Path, figures: dict[str, Any]
) -> None:
    """SIGSTOP freezes the target's emulator with its connections open: the send hangs for
    12 s, more than twice the source's 5-second lock. The local host renews the locks of the
    batch in flight, so the batch is neither redelivered meanwhile nor dead-lettered."""
    document = topology_document(["weu", "neu"], [("weu", "neu")])
    with Cluster(document, tmp_path) as cluster:
        with LocalHost(cluster.topology, cluster.environ) as host:
            cluster.publish("weu", "orders", originals("warm", 10))
            eventually(lambda: cluster.count("neu", "orders", "audit") >= 10, timeout=60)
            cluster.nodes["neu"].pause()
            cluster.publish("weu", "orders", originals("m", 100))
            time.sleep(12)
            cluster.nodes["neu"].resume()
            eventually(
                lambda: len(set(message_ids(cluster.peek("neu", "orders", "audit")))) >= 110,
                timeout=120,
                what="everything after the target woke up",
            )
            # The task counts a batch once every message of it is settled at the source, after
            # the copies reached the target: on a loaded machine that is seconds later.
            status = host.status["weu-to-neu"]
            eventually(lambda: status.messages >= 110, timeout=60, what="the batch counted")
        copies = message_ids(cluster.peek("neu", "orders", "audit"))
        _assert_clean(cluster, "weu", "to-neu")
    assert set(copies) == {f"warm-{i}" for i in range(10)} | {f"m-{i}" for i in range(100)}
    figures["target hung 12 s (> 2 locks), 100 messages: duplicates (same MessageId)"] = (
        sum(copies.values()) - 110
    )


def _true_filters(name: str, document: dict[str, Any]) -> None:
    """Replace the loop-prevention rule of every replication subscription with a TrueFilter
    (someone 'fixed' the rules in the portal)."""
    for namespace in document["UserConfig"].get("Namespaces", []):
        for topic in namespace.get("Topics", []):
            for subscription in topic.get("Subscriptions", []):
                if subscription["Name"].startswith("to-"):
                    subscription["Rules"] = [
                        {
                            "Name": "$Default",
                            "Properties": {
                                "FilterType": "Sql",
                                "SqlFilter": {"SqlExpression": "1=1"},
                            },
                        }
                    ]


def test_a_four_region_mesh_without_its_rules_still_never_loops(tmp_path: Path) -> None:
    names = ["weu", "neu", "eus", "sea"]
    pairs = [(a, b) for a in names for b in names if a != b]
    document = topology_document(names, pairs)
    with Cluster(document, tmp_path, edit_config=_true_filters) as cluster:
        for name in names:
            cluster.publish(name, "orders", originals(name, 25))
        with LocalHost(cluster.topology, cluster.environ) as host:
            assert host.wait_until_idle(idle_seconds=5, timeout=180, at_least=4 * 4 * 25 - 100)
        expected = {f"{name}-{i}" for name in names for i in range(25)}
        for name in names:
            copies = message_ids(cluster.peek(name, "orders", "audit"))
            assert set(copies) == expected, name
            assert all(count == 1 for count in copies.values()), f"{name}: a message looped"

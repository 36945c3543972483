"""Heartbeats make a stopped path visible: the heartbeat age at the target stays small while
the path replicates, grows while the target namespace is down, and recovers after it is back."""

from __future__ import annotations

import time
from pathlib import Path

from replication.heartbeats import GAUGE_NAME, heartbeat_observations
from replication.hosts.local import LocalHost

from .harness import Cluster, event_hubs_document, eventually, topology_document


def test_heartbeat_age_grows_while_the_path_is_down_and_recovers(
    tmp_path: Path, figures: dict[str, object]
) -> None:
    document = topology_document(["weu", "neu"], [("weu", "neu")], tolerance="PT1M")
    document["heartbeats"] = {"enabled": True, "interval": "PT1S"}

    with (
        Cluster(document, tmp_path) as cluster,
        LocalHost(cluster.topology, cluster.environ) as host,
    ):

        def age() -> float | None:
            return host.heartbeats.ages()[("weu", "neu")]

        def fresh() -> bool:
            current = age()
            return current is not None and current < 4

        eventually(fresh, timeout=60, what="a first heartbeat weu->neu")
        healthy = []
        for _ in range(10):  # while the path works, the age stays around one interval
            time.sleep(0.5)
            healthy.append(age() or 0.0)
        assert max(healthy) < 5, healthy
        (observation,) = heartbeat_observations(host.heartbeats)
        assert observation.attributes == {"replication.origin": "weu", "replication.target": "neu"}

        cluster.nodes["neu"].kill()
        time.sleep(12)
        stale = age()
        assert stale is not None
        assert stale > 10, f"{GAUGE_NAME} was {stale:.1f} s after 12 s of outage"
        cluster.nodes["neu"].start()
        recovery = eventually(fresh, timeout=90, what="heartbeat age back under 4 s")
        figures["heartbeat age during a 12 s outage / recovery after restart"] = (
            f"{stale:.1f} s / {recovery:.1f} s"
        )
        # The user task is not held back or disturbed by the heartbeat path.
        assert host.status["heartbeat-weu-to-neu"].messages > 0
        assert host.status["weu-to-neu"].messages == 0


def test_an_event_hubs_path_has_heartbeats_that_age_while_its_target_is_down(
    tmp_path: Path, figures: dict[str, object]
) -> None:
    """Two Event Hubs namespaces: heartbeats cross from ``east``'s heartbeat event hub to
    ``west``'s (never the user's hub ``telemetry``), where the local host's reader records them;
    the age grows while ``west`` is down and recovers after."""
    document = {
        **event_hubs_document(partitions=1, consumer_group="copy"),
        "heartbeats": {"enabled": True, "interval": "PT1S"},
    }
    with (
        Cluster(document, tmp_path) as cluster,
        LocalHost(cluster.topology, cluster.environ) as host,
    ):

        def age() -> float | None:
            return host.heartbeats.ages()[("east", "west")]

        def fresh() -> bool:
            current = age()
            return current is not None and current < 4

        eventually(fresh, timeout=60, what="a first heartbeat east->west")
        cluster.nodes["west"].kill()
        time.sleep(8)
        stale = age()
        assert stale is not None
        assert stale > 6, f"{GAUGE_NAME} was {stale:.1f} s after 8 s of outage"
        cluster.nodes["west"].start()
        recovery = eventually(fresh, timeout=90, what="heartbeat age back under 4 s")
        figures["Event Hubs heartbeat age during an 8 s outage / recovery after restart"] = (
            f"{stale:.1f} s / {recovery:.1f} s"
        )
        assert host.status["heartbeat-east-to-west"].messages > 0
        assert host.status["east-to-west"].messages == 0  # the user's hub carried none of them

"""A user transform that fails, hangs, strips ``repl-*`` or returns garbage, on the emulator.

One all-active pair through the local host (the real SDK receivers and senders against one
emulator process per namespace), a batch of 100 published at once with the bad messages among
good ones. Each case asserts the end state message by message: the bad ones are parked in the
source's parking queue with ``TransformFailed``, every other one arrives once in the target's
``audit`` subscription with ``transformed`` set and its path ``weu;neu`` (no loop: nothing comes
back to ``weu``), nothing is in the source's dead-letter queue, and the task is not failing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from azure.servicebus import ServiceBusMessage

from replication.hosts.local import LocalHost
from replication.properties import DEAD_LETTER_ERROR_DESCRIPTION, DEAD_LETTER_REASON, REPL_PATH

from . import fault_transforms
from .harness import Cluster, message_ids, topology_document


@pytest.fixture(autouse=True)
def _release_hung_calls() -> Iterator[None]:
    fault_transforms.RELEASE.clear()
    yield
    fault_transforms.RELEASE.set()


EXPECTED = {
    "raise": "LookupError: no reference data for raise-1",
    "hang": "did not return within 2 s (the task's transform.timeout)",
    "strip": "the replica changed replication properties (-replication); loop prevention rests "
    "on them: return them as received",
    "garbage": "returned None; a transform returns the message (an Envelope), a list of them, "
    "SkipMessage(reason) or RejectMessage(reason)",
}
"""The parked copy's DeadLetterErrorDescription, after the transform's name, per kind."""


def _text(value: Any) -> Any:
    return value.decode() if isinstance(value, bytes) else value


def _run(tmp_path: Path, bad: list[str]) -> None:
    document = topology_document(["weu", "neu"], [("weu", "neu")], lock="PT30S")
    document["tasks"][0]["transform"] = {
        "function": "tests.faults.fault_transforms:misbehaves",
        "timeout": "PT2S",
    }
    names = [f"good-{i}" for i in range(100 - len(bad))]
    for offset, name in enumerate(bad):  # spread among the good ones
        names.insert(17 + offset * 23, name)
    with Cluster(document, tmp_path) as cluster:
        cluster.publish(
            "weu", "orders", [ServiceBusMessage(b"{}", message_id=name) for name in names]
        )
        with LocalHost(cluster.topology, cluster.environ) as host:
            assert host.wait_until_idle(idle_seconds=3, timeout=120, at_least=100)
            assert not host.failing()
        copies = cluster.peek("neu", "orders", "audit")
        parked = {str(m.message_id): m for m in cluster.peek("weu", "replication-parked")}
        dead = cluster.peek("weu", "orders", "to-neu", dead_letter=True)
        back_home = message_ids(cluster.peek("weu", "orders", "audit"))
    good = {name for name in names if name.startswith("good-")}
    assert message_ids(copies) == dict.fromkeys(good, 1)
    assert set(parked) == set(bad)
    assert dead == []
    assert back_home == dict.fromkeys(names, 1)  # only the originals: nothing looped back
    for copy in copies:
        properties = {_text(k): _text(v) for k, v in copy.application_properties.items()}
        assert properties["transformed"] is True
        assert properties[REPL_PATH] == "weu;neu"
    for name, copy in parked.items():
        properties = {_text(k): _text(v) for k, v in copy.application_properties.items()}
        assert properties[DEAD_LETTER_REASON] == "TransformFailed", name
        assert b"".join(copy.body) == b"{}"
        description = properties[DEAD_LETTER_ERROR_DESCRIPTION]
        assert description.startswith("transform tests.faults.fault_transforms:misbehaves: "), (
            description
        )


def test_a_transform_that_raises_for_one_message_in_a_batch_of_100(tmp_path: Path) -> None:
    _run(tmp_path, ["raise-1"])


def test_a_transform_that_hangs(tmp_path: Path) -> None:
    _run(tmp_path, ["hang-1"])


def test_a_transform_that_strips_replication_properties(tmp_path: Path) -> None:
    _run(tmp_path, ["strip-1"])


def test_a_transform_that_returns_garbage(tmp_path: Path) -> None:
    _run(tmp_path, ["garbage-1", "garbage-2"])

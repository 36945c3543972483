"""What a redrive reads (no network): the entity per task and ``--from``, the configuration
errors, and the original a parked copy is turned back into."""

from __future__ import annotations

from pathlib import Path

import pytest

from replication.envelope import Envelope
from replication.exceptions import ConfigurationError
from replication.operations import RedriveOrigin, redrive_source
from replication.planning import DeadLetter
from replication.properties import DEAD_LETTER_SOURCE, REPL_PATH, unparked
from replication.runtime import parked_copy
from replication.topology import load_topology

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "active-passive-and-stream.json"


def test_parking_is_undone_and_everything_else_kept() -> None:
    original = Envelope(
        body=b"{}", message_id="m-1", subject="s", application_properties={REPL_PATH: "a;b", "x": 1}
    )
    copy = parked_copy(DeadLetter(original, "TargetNotFound", "gone"), "a/q")
    received = copy.replace(dead_letter_reason="TargetNotFound", sequence_number=7)
    assert unparked(received) == original.replace(sequence_number=7)


def test_dead_letter_reads_the_sources_dlq_and_parked_the_dead_letter_target() -> None:
    topology = load_topology(EXAMPLE)
    dlq = redrive_source(topology, "payments-to-standby", RedriveOrigin.DEAD_LETTER)
    assert dlq.label == "primary/payments/Subscriptions/replication/$DeadLetterQueue"
    assert dlq.belongs({})
    parked = redrive_source(topology, "devices-to-queue", RedriveOrigin.PARKED)
    assert parked.label == "standby/device-events-rejected"
    own = {DEAD_LETTER_SOURCE: "ingest/devices/ConsumerGroups/replication"}
    assert parked.belongs(own)
    assert not parked.belongs({DEAD_LETTER_SOURCE: "ingest/other/ConsumerGroups/replication"})
    assert not parked.belongs({})


@pytest.mark.parametrize(
    ("task", "origin", "message"),
    [
        ("devices-to-q", RedriveOrigin.PARKED, "unknown task 'devices-to-q' (did you mean"),
        ("devices-to-queue", RedriveOrigin.DEAD_LETTER, "has no dead-letter queue"),
        ("jobs-spillover", RedriveOrigin.DEAD_LETTER, "already reads the dead-letter queue"),
    ],
)
def test_impossible_origins_are_configuration_errors(
    task: str, origin: RedriveOrigin, message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message.replace("(", r"\(")):
        redrive_source(load_topology(EXAMPLE), task, origin)

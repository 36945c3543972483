"""Event Hubs stream to a Service Bus queue (``examples/stream-to-queue.json``): readings of
eight devices, keyed by device, spread over four partitions; each device's readings arrive in
the queue in the order they were sent."""

from __future__ import annotations

from .._checks import order_per_key
from .._scenario import Scenario, Stage, message

DEVICES = 8
READINGS = 10


def drive(stage: Stage) -> None:
    readings = [
        message(f"device-{d}-{n:02d}", {"n": n}, key=f"device-{d}")
        for n in range(READINGS)
        for d in range(DEVICES)
    ]
    stage.publish("ingest", "devices", readings, expect=["weu/device-events"])


SCENARIO = Scenario(
    name="stream",
    title="stream to queue",
    example="stream-to-queue.json",
    drive=drive,
    checks=(order_per_key(),),
)

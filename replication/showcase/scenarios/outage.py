"""An outage (``examples/two-region-all-active.json``): orders stream into ``weu`` while
``neu``, served by its own emulator process, is killed (SIGKILL) and restarted with what it
had persisted. The task to ``neu`` retries through the outage and catches up; nothing is lost
and, with duplicate detection on the topics, nothing arrives twice."""

from __future__ import annotations

from .._checks import in_every_namespace
from .._scenario import Scenario, Stage, message

WAVES = 12
PER_WAVE = 5
KILL_AFTER_WAVE = 3
DOWN_SECONDS = 8.0
BOTH = ["weu/orders/billing", "neu/orders/billing"]


def drive(stage: Stage) -> None:
    stage.publish(
        "neu", "orders", [message(f"neu-{n:03d}", {"n": n}) for n in range(20)], expect=BOTH
    )
    for wave in range(WAVES):
        if wave == KILL_AFTER_WAVE:
            stage.say(f"neu killed, down for {DOWN_SECONDS:.0f} s")
            stage.kill("neu")
        orders = [
            message(f"weu-{n:03d}", {"n": n}) for n in range(wave * PER_WAVE, (wave + 1) * PER_WAVE)
        ]
        stage.publish("weu", "orders", orders, expect=BOTH)
        stage.pause(DOWN_SECONDS / (WAVES - KILL_AFTER_WAVE))
    stage.say("neu restarted")
    stage.restart("neu")
    stage.publish(
        "neu", "orders", [message(f"neu-{n:03d}", {"n": n}) for n in range(20, 40)], expect=BOTH
    )


SCENARIO = Scenario(
    name="outage",
    title="outage (target killed)",
    example="two-region-all-active.json",
    drive=drive,
    checks=(in_every_namespace(),),
    isolated=("neu",),
)

"""A failover drill (``examples/active-passive-failover.json``): the orders application, a
publisher and a consumer written with :mod:`replication.failover`, goes through a planned
failover to the secondary and back. It is the drill of ``python -m replication drill --planned``
(:func:`replication.drill.drill`, the same code) on the showcase's emulators and local host,
with Azurite holding the binding store: steady traffic; publishers moved, replication caught
up, consumers moved; the primary killed for maintenance (its own emulator process) while the
traffic goes to the secondary; the primary restarted; publishers moved back, the secondary
drained, consumers moved back; traffic again.

Counted from the brokers like every scenario: every copy the consumer took from the two
``billing`` subscriptions (processed, or completed by the skip helper as already processed)
and what they still hold at the end. A message the primary acknowledged must be held in both
(the original and its replica), one the secondary acknowledged in the secondary's only; the
application must have processed each once (:func:`~replication.showcase._checks.processed_once`).
Only the recovery times are the drill's own: the clients' clocks, which no broker holds.
The Event Hubs pair of the example replicates too, without an application (the showcase reads
Service Bus entities only).
"""

from __future__ import annotations

import tempfile
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path

from replication.drill import DrillReport, DrillSettings, azurite, drill, pick_applications
from replication.envelope import Envelope

from .._checks import processed_once
from .._scenario import Scenario, Stage

APPLICATION = "servicebus"
"""The drill's application on the Service Bus pair (``orders``, subscription ``billing``)."""
WHERE = {
    "primary": ["primary/orders/billing", "secondary/orders/billing"],
    "secondary": ["secondary/orders/billing"],
}
"""Where a copy of a message must be held, by the namespace that acknowledged it."""
SETTINGS = DrillSettings(steady=3.0, traffic=5.0, interval=0.1)
"""Shorter phases than the command's (5 s of traffic each, 10 messages a second)."""


class _StageSite:
    """The drill's :class:`~replication.drill.DrillSite` on the showcase's stage."""

    def __init__(self, stage: Stage, storage: str) -> None:
        self._stage = stage
        self.environ: Mapping[str, str] = {
            **stage.settings,
            "REPLICATION_FAILOVER_STORAGE": storage,
        }

    def kill(self, namespace: str) -> None:
        self._stage.kill(namespace)

    def restart(self, namespace: str) -> None:
        self._stage.restart(namespace)

    def say(self, text: str) -> None:
        self._stage.say(text)


def drive(stage: Stage) -> None:
    picks = {k: p for k, p in pick_applications(stage.topology).items() if k == APPLICATION}
    with (
        tempfile.TemporaryDirectory(prefix="showcase-failover-") as scratch,
        azurite(Path(scratch)) as storage,
    ):
        stage.say("steady traffic")
        report = drill(
            stage.topology, _StageSite(stage, storage), picks, forced=False, settings=SETTINGS
        )
    published, _ = report.records[APPLICATION]
    for namespace, places in WHERE.items():
        stage.expect([d.message_id for d in published if d.namespace == namespace], places=places)
    pick = picks[APPLICATION]
    taken: defaultdict[tuple[str, bool], list[Envelope]] = defaultdict(list)
    for delivery in report.deliveries[APPLICATION]:
        place = f"{delivery.namespace}/{pick.entity}/{pick.reader}"
        taken[(place, delivery.processed)].append(delivery.copy)
    for (place, processed), copies in taken.items():
        stage.consumed(place, copies, processed=processed)
    _measure(stage, report)


def _measure(stage: Stage, report: DrillReport) -> None:
    """The drill's recovery times (and a switch command that failed) for the verdict."""
    phases = {"failover": report.failover[APPLICATION], "failback": report.failback[APPLICATION]}
    figures: dict[str, float] = {}
    for phase, numbers in phases.items():
        figures[f"{phase}_rto_publish_seconds"] = numbers.rto_publish_seconds
        figures[f"{phase}_rto_consume_seconds"] = numbers.rto_consume_seconds
    failover, failback = phases["failover"], phases["failback"]
    text = (
        f"RTO publish/consume {failover.rto_publish_seconds:.1f}/"
        f"{failover.rto_consume_seconds:.1f} s, failback {failback.rto_publish_seconds:.1f}/"
        f"{failback.rto_consume_seconds:.1f} s"
    )
    failed = [f"{name} exited {code}" for name, code in report.switch_codes.items() if code]
    if failed:
        text = f"switch {', '.join(failed)}; {text}"
    stage.measured(text, ok=not failed, figures=figures)


SCENARIO = Scenario(
    name="failover",
    title="failover (planned)",
    example="active-passive-failover.json",
    drive=drive,
    checks=(processed_once(),),
    isolated=("primary",),
    needs_azurite=True,
    timeout=180.0,
)

"""Spillover (``examples/spillover.json``): the primary's consumer fails on every report job;
the broker dead-letters those after ``maxDeliveryCount`` (3) deliveries, and the spillover task
moves them from the dead-letter queue to the secondary, where they run."""

from __future__ import annotations

from replication.envelope import Envelope

from .._checks import replica_time_to_live
from .._scenario import Scenario, Stage, message

JOBS = 40
REPORT_EVERY = 4


def is_report(job: Envelope) -> bool:
    """The jobs the primary's consumer cannot run (its report service is down)."""
    return job.application_properties.get("kind") == "report"


def drive(stage: Stage) -> None:
    jobs = [
        message(f"job-{n:03d}", {"n": n, "kind": "report" if n % REPORT_EVERY == 0 else "email"})
        for n in range(JOBS)
    ]
    for job in jobs:
        place = "secondary/jobs" if is_report(job) else "primary/jobs"
        stage.publish("primary", "jobs", [job], expect=[place])


SCENARIO = Scenario(
    name="spillover",
    title="spillover",
    example="spillover.json",
    drive=drive,
    checks=(replica_time_to_live(),),
    failing_consumers={"primary/jobs": is_report},
)

"""Active-passive (``examples/active-passive.json``): payments published in the primary reach
the standby as replicas that expire after the task's ``replicaTimeToLive``."""

from __future__ import annotations

from .._checks import replica_time_to_live
from .._scenario import Scenario, Stage, message

PAYMENTS = 40


def drive(stage: Stage) -> None:
    payments = [message(f"payment-{n:03d}", {"n": n, "amount": 10 + n}) for n in range(PAYMENTS)]
    stage.publish(
        "primary",
        "payments",
        payments,
        expect=["primary/payments/settlement", "standby/payments/settlement"],
    )


SCENARIO = Scenario(
    name="active-passive",
    title="active-passive",
    example="active-passive.json",
    drive=drive,
    checks=(replica_time_to_live(),),
)

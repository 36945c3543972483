"""Latency optimization (``examples/latency-optimization.json``): orders from Europe cross the
Atlantic once, to the US hub ``eus``, which fans them out to ``cus`` and ``wus``; orders
published at the hub go to every other region. Loop prevention stops the hub from sending
Europe's orders back to Europe, and Europe from sending the hub's back."""

from __future__ import annotations

from .._checks import routed_through
from .._scenario import Scenario, Stage, message

REGIONS = ("weu", "eus", "cus", "wus")
PER_REGION = 30


def drive(stage: Stage) -> None:
    everywhere = [f"{region}/orders/fulfilment" for region in REGIONS]
    for region in ("weu", "eus"):
        orders = [message(f"{region}-{n:03d}", {"n": n}) for n in range(PER_REGION)]
        stage.publish(region, "orders", orders, expect=everywhere)


SCENARIO = Scenario(
    name="latency",
    title="latency optimization",
    example="latency-optimization.json",
    drive=drive,
    checks=(routed_through("eus", origin="weu"),),
)

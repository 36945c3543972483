"""Splitting and routing (``examples/routing.json``): orders go to the region their ``region``
property names, product recalls to both regions, and orders for a region without a route are
parked with ``NoRouteMatched``."""

from __future__ import annotations

from .._checks import split_by_place
from .._scenario import Scenario, Stage, message

ORDERS = 40
UNROUTED = "NoRouteMatched"


def drive(stage: Stage) -> None:
    for n in range(ORDERS):
        kind = ("emea", "amer", "apac", "recall")[n % 4]
        if kind == "recall":
            properties = {"n": n, "region": "apac", "kind": "recall"}
            expect = ["emea/orders/fulfilment", "amer/orders/fulfilment"]
        else:
            properties = {"n": n, "region": kind, "kind": "order"}
            expect = [f"{kind}/orders/fulfilment"] if kind != "apac" else []
        stage.publish(
            "hq",
            "orders",
            [message(f"order-{n:03d}", properties)],
            expect=expect,
            parked=None if expect else UNROUTED,
        )


SCENARIO = Scenario(
    name="routing",
    title="routing",
    example="routing.json",
    drive=drive,
    checks=(split_by_place(),),
)

"""Consolidation (``examples/consolidation.json``): three regions' sales queues, each with its
own name for the store, feed one reporting topic; every copy arrives with ``storeId`` and the
``region`` it came from."""

from __future__ import annotations

from .._checks import replicas_have, replicas_without
from .._scenario import Scenario, Stage, message

PER_REGION = 20
STORE_PROPERTY = {"weu": "shop", "neu": "store_no", "eus": "storeId"}


def drive(stage: Stage) -> None:
    for region, store in STORE_PROPERTY.items():
        sales = [
            message(f"{region}-sale-{n:03d}", {"n": n, store: f"{region}-{n % 3}"})
            for n in range(PER_REGION)
        ]
        stage.publish(region, "sales", sales, expect=["hq/sales/reporting"])


SCENARIO = Scenario(
    name="consolidation",
    title="consolidation",
    example="consolidation.json",
    drive=drive,
    checks=(replicas_have("storeId", "region"), replicas_without("shop", "store_no")),
)

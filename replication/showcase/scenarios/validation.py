"""Validation, reduction and enrichment (``examples/validation.json``): valid orders reach
``neu`` without their card number and stamped ``validated-in``; invalid ones (no customer, a
negative amount, an unknown currency) are parked with ``ValidationFailed``. Every order is
still fulfilled in ``weu``, where it was published."""

from __future__ import annotations

from replication.envelope import PropertyValue

from .._checks import replicas_with, replicas_without
from .._scenario import Scenario, Stage, message

ORDERS = 50
REJECTED = "ValidationFailed"


def order(n: int) -> dict[str, PropertyValue]:
    """Order ``n``'s properties; every fifth is invalid, in one of three ways."""
    properties: dict[str, PropertyValue] = {
        "n": n,
        "customer": f"c-{n % 7}",
        "amount": 20 + n,
        "currency": "EUR",
        "card-number": f"4111-0000-0000-{n:04d}",
    }
    if n % 5 == 4:
        flaw = n // 5 % 3
        if flaw == 0:
            del properties["customer"]
        elif flaw == 1:
            properties["amount"] = -5
        else:
            properties["currency"] = "XYZ"
    return properties


def drive(stage: Stage) -> None:
    for n in range(ORDERS):
        valid = n % 5 != 4
        stage.publish(
            "weu",
            "orders",
            [message(f"order-{n:03d}", order(n))],
            expect=["weu/orders/fulfilment"] + (["neu/orders/analytics"] if valid else []),
            parked=None if valid else REJECTED,
        )


SCENARIO = Scenario(
    name="validation",
    title="validation",
    example="validation.json",
    drive=drive,
    checks=(replicas_without("card-number"), replicas_with({"validated-in": "weu"})),
)

"""User transforms (``examples/user-transforms.json`` with ``examples/user_transforms.py``): card
numbers are masked before orders leave ``weu`` (a body that is not JSON is rejected, one whose
masked card breaks the schema fails validation); sales are enriched with their store's city
from a lookup table (an unknown store is rejected, test traffic skipped); shipments are routed
by their body's ``shipTo.country``. Rejected and invalid messages are parked as received."""

from __future__ import annotations

import json

from replication.envelope import Envelope, PropertyValue

from .._checks import every_replica, replicas_have
from .._scenario import Scenario, Stage

COUNT = 12


def _message(message_id: str, body: object, **properties: PropertyValue) -> Envelope:
    text = json.dumps(body).encode() if body is not None else b"not json"
    return Envelope(
        body=text,
        message_id=message_id,
        content_type="application/json",
        application_properties=properties,
    )


def _masked(replica: Envelope) -> bool:
    try:
        document = json.loads(replica.body)
    except ValueError:
        return False
    card = document.get("card") if isinstance(document, dict) else None
    return card is None or (isinstance(card, str) and card[:-4].strip("*") == "")


def drive(stage: Stage) -> None:
    for n in range(COUNT):
        if n % 6 == 5:
            order, parked = None, "TransformRejected"  # not JSON
        elif n % 6 == 4:
            order, parked = {"orderId": f"o-{n}", "card": "12"}, "ValidationFailed"
        else:
            order, parked = {"orderId": f"o-{n}", "card": f"4111111111{n:06d}"}, None
        stage.publish(
            "weu",
            "orders",
            [_message(f"order-{n:03d}", order)],
            expect=[] if parked else ["neu/orders"],
            parked=parked,
        )
    for n in range(COUNT):
        store = ("s-001", "s-002", "s-003", "s-404")[n % 4]
        stage.publish(
            "weu",
            "sales",
            [_message(f"sale-{n:03d}", {"amount": n}, store=store)],
            expect=[] if store == "s-404" else ["neu/sales"],
            parked="TransformRejected" if store == "s-404" else None,
        )
    for n in range(COUNT):
        country = ("ie", "FR", "IE", "NL")[n % 4]
        stage.publish(
            "weu",
            "shipments",
            [_message(f"ship-{n:03d}", {"shipTo": {"country": country}})],
            expect=["neu/shipments-ie" if country.upper() == "IE" else "neu/shipments-other"],
        )


SCENARIO = Scenario(
    name="transforms",
    title="user transforms",
    example="user-transforms.json",
    drive=drive,
    checks=(
        every_replica(_masked, "card numbers masked"),
        replicas_have("repl-origin"),
    ),
)

"""The README's worked transforms: mask a field, enrich from a lookup table, route by a body field.

``examples/user-transforms.json`` names them as ``user_transforms:<function>``: a module beside
the topology file is found there. In an application of your own they sit beside
``function_app.py`` and ``topology.json`` (``"my_transforms:mask_card"``) or are registered in
code with :class:`replication.transforms.Transforms`.

Each receives the message as an :class:`~replication.envelope.Envelope` (frozen: ``replace``
and ``with_properties`` return changed copies) and returns the replica, a list of replicas,
``SkipMessage(reason)`` or ``RejectMessage(reason)``. The replication properties (``repl-*``)
travel with the copies these functions return; a function that changed them would have its
message parked instead of sent.
"""

from __future__ import annotations

import json
from typing import Any

from replication.envelope import Envelope
from replication.transforms import RejectMessage, SkipMessage, TransformResult


def _document(message: Envelope) -> dict[str, Any] | None:
    try:
        document = json.loads(message.body)
    except ValueError:
        return None
    return document if isinstance(document, dict) else None


def mask_card(message: Envelope) -> TransformResult:
    """Strip personal data before a message leaves its region: ``card`` keeps its last four
    digits. A body that is not a JSON object is rejected (parked as ``TransformRejected``)."""
    order = _document(message)
    if order is None:
        return RejectMessage("body is not a JSON object")
    card = order.get("card")
    if isinstance(card, str) and len(card) > 4:
        order["card"] = "*" * (len(card) - 4) + card[-4:]
    return message.replace(body=json.dumps(order, separators=(",", ":")).encode())


STORES = {
    "s-001": {"city": "Amsterdam", "country": "NL"},
    "s-002": {"city": "Dublin", "country": "IE"},
    "s-003": {"city": "Lyon", "country": "FR"},
}
"""The lookup table: reference data loaded once, with the module (a file, a package's data, an
app setting), never per message."""


def add_store_city(message: Envelope) -> TransformResult:
    """Enrich from a lookup table: the ``store`` property's city and country become properties
    that consumers in the other region (and SQL filters there) can read. Test traffic is
    skipped; an unknown store is rejected so that someone looks at it."""
    store = message.application_properties.get("store")
    if message.application_properties.get("test") is True:
        return SkipMessage("test traffic stays in its region")
    found = STORES.get(str(store))
    if found is None:
        return RejectMessage(f"unknown store {store!r}")
    return message.with_properties({"storeCity": found["city"], "storeCountry": found["country"]})


def country_from_body(message: Envelope) -> TransformResult:
    """Route by a body field: the ``routing`` pattern's SQL conditions read properties, not the
    body, so the transform copies the body's ``shipTo.country`` into the ``country`` property
    and the routes match on it (``country = 'IE'``)."""
    order = _document(message)
    shipping = order.get("shipTo") if order is not None else None
    country = shipping.get("country") if isinstance(shipping, dict) else None
    if not isinstance(country, str):
        return RejectMessage("body has no shipTo.country")
    return message.with_properties({"country": country.upper()})

"""User transforms that misbehave for chosen messages, for ``test_transforms.py``: the module a
task's ``"transform": "tests.faults.fault_transforms:..."`` imports, as an app's module would be.
"""

from __future__ import annotations

import threading

from replication.envelope import Envelope
from replication.properties import is_replication_property

RELEASE = threading.Event()
"""Set by the test when it ends, so that a hung call's thread finishes."""


def misbehaves(message: Envelope) -> object:
    """Adds ``transformed`` to every message, except: ``raise-*`` raise, ``hang-*`` hang,
    ``strip-*`` lose their replication properties, ``garbage-*`` return None."""
    kind = str(message.message_id).partition("-")[0]
    if kind == "raise":
        raise LookupError(f"no reference data for {message.message_id}")
    if kind == "hang":
        RELEASE.wait(60)
    if kind == "strip":
        kept = {
            k: v
            for k, v in message.application_properties.items()
            if not is_replication_property(k)
        }
        return message.replace(application_properties=kept)
    if kind == "garbage":
        return None
    return message.with_properties({"transformed": True})

"""The Azure Functions host: the Function app and what the Functions host delivers to it.

- ``_app``: :func:`build_app`, one batch-triggered function per task of the topology (plus the
  heartbeat timer and readers); ``function_app.py`` at the repository root calls it.
- ``_conversion``: envelopes from the trigger's batch as the Functions host really delivers it
  (bodies, the metadata arrays, application properties), read without the messaging SDKs.

``from replication.hosts.functions import build_app`` is the stable public path.
"""

from ._app import DEAD_LETTER_QUEUE_SUFFIX, build_app, register_task
from ._conversion import (
    STRING_FIELDS,
    Reread,
    TriggerMessage,
    TriggerMetadataError,
    envelopes_from_event_hub_batch,
    envelopes_from_servicebus_batch,
    parse_host_time,
    reread_reasons,
)

__all__ = [
    "DEAD_LETTER_QUEUE_SUFFIX",
    "STRING_FIELDS",
    "Reread",
    "TriggerMessage",
    "TriggerMetadataError",
    "build_app",
    "envelopes_from_event_hub_batch",
    "envelopes_from_servicebus_batch",
    "parse_host_time",
    "register_task",
    "reread_reasons",
]

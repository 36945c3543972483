"""Failover for applications: publishers and consumers that switch namespaces without losing or
double-processing messages.

Replication copies messages; it does not move the applications. Microsoft's active-passive
guidance ("Message replication and cross-region federation") ends with a contract the
application must keep, and ships no code for it: publishers send to the primary and switch when
it is unreachable; consumers on the secondary skip what they already processed on the primary
(by MessageId, with the enqueue time as a watermark allowing for clock drift); on failback
publishers move first, the secondary drains, then consumers follow; Event Hubs consumers get a
checkpoint store on the other side built from a point in time. This package is that code, for
Service Bus queues and topics and Event Hubs, sync and asyncio. It needs nothing of this project
running in the application's process: the Azure SDKs and, for switching and for a log that
survives restarts, a Blob Storage container (Azurite locally).

- :class:`FailoverPublisher` / :class:`AsyncFailoverPublisher`: send to the active namespace;
  move on their own after an unavailability window; follow the operator's switch.
- :class:`FailoverConsumer` / :class:`AsyncFailoverConsumer` (Service Bus) and
  :class:`EventHubFailoverConsumer` / :class:`AsyncEventHubFailoverConsumer` (Event Hubs): read
  from the active namespace and skip what the processed-message log knows; the Event Hubs
  consumer translates its checkpoints when it moves (:func:`start_plan`).
- :class:`FailoverStore`: the Blob Storage container of binding documents and consumer logs.
- :class:`ProcessedLog`, :func:`origin_of`: the skip helper, for applications that settle
  messages their own way.

Every network call of these clients has a deadline (``call_timeout``, 10 s; the store's
``timeout``, 10 s): a namespace or store that accepts connections and answers nothing costs a
call deadline, never a hang (``docs/explanation/failover-model.md``, "When a region hangs
instead of refusing"). The operator's side is ``python -m replication failover|failback`` (see
``docs/how-to/failover.md``); :mod:`.overview` is what ``status`` shows of the binding
documents. SDK and Blob Storage code lives in ``replication.transport``
(``failover_channels``, ``failover_blobs``); the decisions (``_processed``, ``_origin``,
``_bindings``, ``_follower``, ``_publisher``, ``_state``, ``_checkpoints``) import no SDK.
"""

from replication.transport.connections import NamespaceAccess
from replication.transport.failover import (
    BlobFailoverStore as FailoverStore,
)
from replication.transport.failover import (
    FailoverStoreError,
    SwitchInProgressError,
)

from ._bindings import BindingDocument, BindingDocumentError, BindingRule, Role
from ._checkpoints import DEFAULT_SKEW_ALLOWANCE, StartPlan, start_plan
from ._follower import DEFAULT_POLL_INTERVAL, BindingFollower
from ._memory import MemoryFailoverStore
from ._origin import OriginPosition, origin_of
from ._processed import Decision, ProcessedLog, Verdict
from ._publisher import DEFAULT_UNAVAILABILITY_WINDOW, PublisherCounters
from .consumers import AsyncFailoverConsumer, ConsumerCounters, FailoverConsumer
from .event_hub_consumer import AsyncEventHubFailoverConsumer, EventHubFailoverConsumer
from .publishers import AsyncFailoverPublisher, FailoverPublisher, PublishTimeoutError

__all__ = [
    "DEFAULT_POLL_INTERVAL",
    "DEFAULT_SKEW_ALLOWANCE",
    "DEFAULT_UNAVAILABILITY_WINDOW",
    "AsyncEventHubFailoverConsumer",
    "AsyncFailoverConsumer",
    "AsyncFailoverPublisher",
    "BindingDocument",
    "BindingDocumentError",
    "BindingFollower",
    "BindingRule",
    "ConsumerCounters",
    "Decision",
    "EventHubFailoverConsumer",
    "FailoverConsumer",
    "FailoverPublisher",
    "FailoverStore",
    "FailoverStoreError",
    "MemoryFailoverStore",
    "NamespaceAccess",
    "OriginPosition",
    "ProcessedLog",
    "PublishTimeoutError",
    "PublisherCounters",
    "Role",
    "StartPlan",
    "SwitchInProgressError",
    "Verdict",
    "origin_of",
    "start_plan",
]

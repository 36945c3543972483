"""Everything that imports the Azure SDKs: converters, senders, receive loops and error translation.

No other package of this project imports ``azure.servicebus``, ``azure.eventhub`` or the other
Azure client libraries (``tests/unit/test_architecture.py``); patterns stay pure and testable
without a network.

- :mod:`replication.transport.servicebus` and :mod:`replication.transport.eventhubs`: each
  broker's adapters: one field map into and out of :class:`~replication.envelope.Envelope`,
  the local host's receive loops with their one settle step (a Service Bus message completed,
  abandoned or dead-lettered; an event hub partition checkpointed); the one receiver factory,
  the one peek scan, the heartbeat reader and the entity reader of ``redrive`` (Service Bus);
  checkpoints and event re-reads (Event Hubs);
- ``senders``: the SDK :class:`~replication.runtime.TargetSender` implementations and the
  per-namespace client cache (``SenderFactory``);
- ``inspection``: reading what sources hold without settling anything, for ``status``
  (:mod:`replication.operations`); ``consumers``: local consumers that drain and count;
- ``connections`` (how a namespace is reached), ``errors`` (SDK errors to
  :mod:`replication.exceptions`), ``logs`` (quieting the SDKs' per-link logging), and the
  shared ``_common`` / ``_properties`` converters.

This package re-exports nothing: importing one adapter must not import both SDKs.
"""

"""Everything that imports the Azure SDKs: converters, senders, receive loops and error translation.

No other package of this project imports ``azure.servicebus``, ``azure.eventhub`` or the other
Azure client libraries (``tests/unit/test_architecture.py``); patterns stay pure and testable
without a network.

- :mod:`replication.transport.servicebus` and :mod:`replication.transport.eventhubs`: each
  broker's message conversion; Service Bus receivers, peeking and the entity reader of
  ``redrive``; Event Hubs checkpoints and re-reads;
- ``senders``: the SDK :class:`~replication.runtime.TargetSender` implementations and the
  per-namespace client cache (``SenderFactory``);
- ``receivers``: the receive loops of the local host; ``heartbeats``: the heartbeat reader;
- ``inspection``: reading what sources hold without settling anything, for ``status``
  (:mod:`replication.operations`); ``consumers``: local consumers that drain and count;
- ``connections`` (how a namespace is reached), ``errors`` (SDK errors to
  :mod:`replication.exceptions`), ``logs`` (quieting the SDKs' per-link logging), and the
  shared ``_common`` / ``_properties`` converters.

This package re-exports nothing: importing one adapter must not import both SDKs.
"""

"""The Function app's Service Bus capture functions: one topic trigger per capture task.

Registered by :func:`replication.hosts.functions.build_app` for each capture of the topology
(:func:`~replication.topology.capture_sources`: every topic of a Service Bus namespace with a
``capture`` section): ``capture-<namespace>-<topic>``, a batch trigger on the topic's
``replication-capture`` subscription, converted like a replication task's batch
(:mod:`._conversion`, re-reading by peek what the trigger metadata cannot give exactly) and
written by :class:`~replication.capture.CaptureRunner`.

The host completes the batch when the function returns (``autoCompleteMessages``), and abandons
it when the function raises, so nothing is completed before it is durable:

- a store that fails raises :class:`~replication.exceptions.CaptureWriteError`: the whole batch
  comes back;
- a message the converter cannot turn into a copy (its trigger metadata and its re-read both
  fail) is not written; its batch-mates are written first, then the function raises, so the
  batch comes back, and after ``maxDeliveryCount`` deliveries it rests in the subscription's
  dead-letter queue (its batch-mates, already captured, with it: the audit sees them once, or
  twice with the same sequence number when they are captured again in another grouping).
"""

# No "from __future__ import annotations": the Functions worker reads the handlers' annotations.

import logging
import typing
from collections.abc import Callable, Mapping, Sequence

import azure.functions as func

from replication.capture import CaptureRunner
from replication.envelope import Envelope
from replication.exceptions import CaptureWriteError
from replication.planning import DeadLetter
from replication.settings import Settings
from replication.topology import CaptureSource, Topology, capture_sources
from replication.transport.senders import SenderFactory

from ._conversion import envelopes_from_servicebus_batch

logger = logging.getLogger(__name__)


def register_captures(
    app: func.FunctionApp, topology: Topology, factory: SenderFactory, settings: Settings
) -> list[str]:
    """Add a capture function per capture of ``topology`` to ``app``; their names."""
    captures = capture_sources(topology)
    if not captures:
        return []
    # Imported here: the blob SDK loads only for an app with a Service Bus capture.
    from replication.transport.capture import capture_store

    for capture in captures:
        runner = CaptureRunner(capture, capture_store(capture.spec, settings.capture_storage))
        subscription = capture.source.subscription
        assert subscription is not None, "a capture reads a subscription"
        handler = app.service_bus_topic_trigger(
            arg_name="messages",
            connection=topology.namespace(capture.source.namespace).connection,
            topic_name=capture.source.entity,
            subscription_name=subscription,
            cardinality=func.Cardinality.MANY,
            data_type=func.DataType.BINARY,
        )(_capture_handler(capture, runner, factory))
        app.function_name(name=capture.name)(handler)
    return [capture.name for capture in captures]


def _capture_handler(
    capture: CaptureSource, runner: CaptureRunner, factory: SenderFactory
) -> Callable[..., None]:
    source = capture.source

    def reread(sequence_numbers: Sequence[int]) -> Mapping[int, Envelope]:
        return factory.peeker(source).peek(sequence_numbers)

    def write(messages: typing.List[func.ServiceBusMessage]) -> None:  # noqa: UP006
        unreadable: list[DeadLetter] = []
        envelopes = envelopes_from_servicebus_batch(
            messages, source=source.entity_path, reread=reread, unreadable=unreadable
        )
        outcome = runner.run(envelopes)
        logger.info("%s: %s", capture.name, outcome.summary())
        if unreadable:
            raise CaptureWriteError(
                f"{capture.name}: {len(unreadable)} message(s) of the batch cannot be read "
                f"({unreadable[0].reason}); the batch comes back and reaches the dead-letter "
                "queue after maxDeliveryCount"
            )

    return write


__all__ = ["register_captures"]

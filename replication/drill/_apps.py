"""The drill's sample applications: a publisher and a consumer of one entity, written with the
failover helpers as an application would write them, recording what they did.

:class:`SampleApp` runs, in threads, a :class:`~replication.failover.FailoverPublisher` sending
one message every ``interval`` (MessageIds ``<app>-<n>``) and a consumer
(:class:`~replication.failover.FailoverConsumer` for a Service Bus topic subscription or queue,
:class:`~replication.failover.EventHubFailoverConsumer` for an event hub) that processes every
message it is handed. It records each acknowledged publish and each processed message with the
namespace and the time (:class:`~replication.drill._figures.Done`); a publish that raised is
not recorded (the drill does not count it as published, even if a namespace did take it).
The Service Bus consumer also keeps every copy it was handed, as received
(:class:`~replication.drill._figures.Delivery`), those the skip helper completed as already
processed among them: what the subscriptions held, for a count from the brokers' side (the
showcase's failover scenario).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from replication.failover import (
    EventHubFailoverConsumer,
    FailoverConsumer,
    FailoverPublisher,
    FailoverStore,
)
from replication.runtime import describe
from replication.transport.deadlines import DEFAULT_CALL_TIMEOUT
from replication.transport.failover import ReceivedMessage, new_message
from replication.transport.servicebus import envelope_from_received

from ._figures import Delivery, Done

logger = logging.getLogger(__name__)


class SampleApp:
    """A publisher and a consumer of one entity in an active-passive pair."""

    def __init__(
        self,
        *,
        kind: str,
        app: str,
        entity: str,
        reader: str | None,
        namespaces: Mapping[str, str],
        store: FailoverStore,
        storage: str,
        interval: float,
        unavailability_window: timedelta,
        poll_interval: timedelta,
        call_timeout: timedelta = DEFAULT_CALL_TIMEOUT,
    ) -> None:
        self.kind = kind
        self.app = app
        self.entity = entity
        self.interval = interval
        self.published: list[Done] = []
        self.processed: list[Done] = []
        self.deliveries: list[Delivery] = []
        self.receives: list[tuple[float, float]] = []
        """(start, end) of every receive call of the Service Bus consumer."""
        self.failed_publishes = 0
        self._stop = threading.Event()
        self._publishing = threading.Event()
        self._publishing.set()
        self._consuming = threading.Event()
        self._consuming.set()
        self._held = threading.Event()
        """Set while the consumer thread waits in :meth:`hold_consumer`'s hold."""
        self.publisher: FailoverPublisher
        self.consumer: FailoverConsumer | EventHubFailoverConsumer
        if kind == "eventhubs":
            self.publisher = FailoverPublisher.event_hub(
                app=app,
                entity=entity,
                namespaces=namespaces,
                store=store,
                unavailability_window=unavailability_window,
                poll_interval=poll_interval,
                call_timeout=call_timeout,
            )
            self.consumer = EventHubFailoverConsumer.event_hub(
                app=app,
                entity=entity,
                consumer_group=reader or "$Default",
                namespaces=namespaces,
                store=store,
                checkpoint_connection_string=storage,
                poll_interval=poll_interval,
                max_wait_time=0.5,
                call_timeout=call_timeout,
            )
        else:
            self.publisher = FailoverPublisher.service_bus(
                app=app,
                entity=entity,
                namespaces=namespaces,
                store=store,
                unavailability_window=unavailability_window,
                poll_interval=poll_interval,
                call_timeout=call_timeout,
            )
            self.consumer = FailoverConsumer.service_bus(
                app=app,
                entity=entity,
                subscription=reader,
                namespaces=namespaces,
                store=store,
                poll_interval=poll_interval,
                on_skip=lambda message: self._delivered(message, processed=False),
                call_timeout=call_timeout,
            )
        self._threads = [
            threading.Thread(target=self._publish, name=f"{app}-publisher", daemon=True),
            threading.Thread(target=self._consume, name=f"{app}-consumer", daemon=True),
        ]

    @property
    def skipped(self) -> int:
        return self.consumer.counters.skipped

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def pause(self) -> float:
        """Stop publishing (the consumer goes on); returns when."""
        self._publishing.clear()
        time.sleep(self.interval)
        return time.monotonic()

    def resume(self) -> None:
        self._publishing.set()

    def hold_consumer(self, timeout: float = 60) -> None:
        """Stop handing messages to the (Service Bus) consumer until :meth:`release_consumer`.

        Returns once the consumer thread has finished the batch it was in (a receive call that
        began before the hold can return messages published after it, slowly on a loaded
        machine), so nothing published from here is processed before the release. Raises
        :class:`TimeoutError` when the thread is not held within ``timeout`` seconds.
        """
        if self.kind == "eventhubs":
            raise ValueError("only a Service Bus consumer can be held")
        self._consuming.clear()
        if not self._held.wait(timeout):
            raise TimeoutError(f"{self.app}: the consumer was not held within {timeout} s")

    def release_consumer(self) -> None:
        self._held.clear()
        self._consuming.set()

    def stop(self) -> None:
        """Stop both threads (the consumer settles what it processed) and close."""
        if self._stop.is_set():
            return
        self._stop.set()
        self._publishing.set()
        self._consuming.set()
        for thread in self._threads:
            thread.join(timeout=60)
        self.publisher.close()

    def _publish(self) -> None:
        number = 0
        while not self._stop.is_set():
            self._publishing.wait()
            if self._stop.is_set():
                return
            number += 1
            message_id = f"{self.app}-{number}"
            message = new_message(self.kind, f"{number}".encode(), message_id)
            key = str(number % 8) if self.kind == "eventhubs" else None
            try:
                namespace = self.publisher.send(
                    message, timeout=timedelta(seconds=60), partition_key=key
                )
            except Exception as error:
                self.failed_publishes += 1
                logger.warning("%s: %s not published: %s", self.app, message_id, describe(error))
                continue
            self.published.append(Done(message_id, namespace, time.monotonic()))
            self._stop.wait(self.interval)

    def _consume(self) -> None:
        consumer = self.consumer
        if isinstance(consumer, EventHubFailoverConsumer):

            def handle(_partition: str, events: list[Any]) -> None:
                now = time.monotonic()
                namespace = consumer.namespace or ""
                self.processed += [Done(str(e.message_id), namespace, now) for e in events]

            consumer.run(handle, self._stop)
            return
        with consumer:
            while not self._stop.is_set():
                if not self._consuming.is_set():
                    self._held.set()
                    self._consuming.wait()
                began = time.monotonic()
                batch = consumer.receive(max_message_count=50, max_wait_time=0.5)
                self.receives.append((began, time.monotonic()))
                for message in batch:
                    self.processed.append(
                        Done(str(message.message_id), consumer.namespace, time.monotonic())
                    )
                    self._delivered(message, processed=True)
                    consumer.complete(message)

    def _delivered(self, message: ReceivedMessage, *, processed: bool) -> None:
        """Keep a Service Bus copy as received, from the namespace the consumer reads."""
        namespace = self.consumer.namespace or ""
        self.deliveries.append(Delivery(namespace, envelope_from_received(message), processed))

    def caught_up(self) -> bool:
        """True when every acknowledged publish has been processed."""
        return {d.message_id for d in self.published} <= {d.message_id for d in self.processed}


__all__ = ["SampleApp"]

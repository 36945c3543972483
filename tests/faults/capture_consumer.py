"""A Service Bus capture consumer, as tests/faults/test_capture.py runs (and kills) it: receive
batches from a subscription with peek-lock (the library's receiver and conversion), write each
with :class:`replication.capture.CaptureWriter` into a folder, and complete the batch only after
the write returned. Ends after ``idle`` seconds without a message.

    python tests/faults/capture_consumer.py CONNECTION_STRING TOPIC SUBSCRIPTION REGION FOLDER
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from azure.servicebus import ServiceBusClient

from replication.capture import CaptureWriter, FolderStore
from replication.transport.servicebus import entity_receiver, envelope_from_received

BATCH = 40
IDLE_SECONDS = 8.0


def main(connection: str, topic: str, subscription: str, region: str, folder: str) -> None:
    writer = CaptureWriter(FolderStore(Path(folder)), region)
    last = time.monotonic()
    with (
        ServiceBusClient.from_connection_string(connection) as client,
        entity_receiver(client, topic, subscription, wait=1) as receiver,
    ):
        while time.monotonic() - last < IDLE_SECONDS:
            batch = receiver.receive_messages(max_message_count=BATCH, max_wait_time=1)
            if not batch:
                continue
            last = time.monotonic()
            written = writer.write([envelope_from_received(m) for m in batch])
            print(f"wrote {len(batch)} in {len(written)} file(s)", flush=True)
            for message in batch:  # settled only once the batch is durable
                receiver.complete_message(message)
            print(f"completed {len(batch)}", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:6])

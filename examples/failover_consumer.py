"""A Service Bus consumer written with the failover helpers, as an application would write it.

Run it with the connection strings of an active-passive pair and of a storage account::

    SB_PRIMARY=... SB_SECONDARY=... FAILOVER_STORAGE=... \\
        python examples/failover_consumer.py --app orders-app --entity orders --subscription billing

It reads from whichever namespace the binding store names for it (``python -m replication
failover`` moves it), skips what it processed before on either namespace (its log lives in the
storage account, so a restarted consumer remembers), and prints one line per message it
processed: ``processed <MessageId> <namespace>``, ``skipped <count>`` whenever the skip helper
skipped more, and ``held <count>`` whenever more receives returned nothing because its log could
not be persisted (back-pressure). ``tests/faults/test_failover.py`` kills it with SIGKILL in the
middle of a failover and starts it again; ``tests/faults/test_failover_hangs.py`` freezes its
store first.
"""

from __future__ import annotations

import argparse
import os
import time
from datetime import timedelta

from replication.failover import FailoverConsumer, FailoverStore


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--app", required=True)
    parser.add_argument("--entity", required=True)
    parser.add_argument("--subscription")
    parser.add_argument("--work-seconds", type=float, default=0.0, help="time per message")
    parser.add_argument(
        "--call-timeout", type=float, default=10.0, help="deadline of each network call"
    )
    args = parser.parse_args()
    deadline = timedelta(seconds=args.call_timeout)
    namespaces = {"primary": os.environ["SB_PRIMARY"], "secondary": os.environ["SB_SECONDARY"]}
    store = FailoverStore.from_connection_string(os.environ["FAILOVER_STORAGE"], timeout=deadline)
    consumer = FailoverConsumer.service_bus(
        app=args.app,
        entity=args.entity,
        subscription=args.subscription,
        namespaces=namespaces,
        store=store,
        poll_interval=timedelta(seconds=1),
        call_timeout=deadline,
    )
    skipped = held = 0
    with consumer:
        while True:
            for message in consumer.receive(max_message_count=5, max_wait_time=1):
                time.sleep(args.work_seconds)  # the application's work
                print(f"processed {message.message_id} {consumer.namespace}", flush=True)
                consumer.complete(message)
            if consumer.counters.skipped != skipped:
                skipped = consumer.counters.skipped
                print(f"skipped {skipped}", flush=True)
            if consumer.counters.held_receives != held:
                held = consumer.counters.held_receives
                print(f"held {held}", flush=True)


if __name__ == "__main__":
    main()

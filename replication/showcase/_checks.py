"""What a pattern promises beyond arrival, checked on the copies the entities held.

Each function here builds a :data:`~._scenario.Check`: given what a scenario's entities held
(:class:`~._figures.Collected`), it says in one line whether the promise holds. They read the
copies only, never the replicator's own account, like the figures of :mod:`._figures`.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Mapping
from datetime import timedelta

from replication.envelope import Envelope, PropertyValue
from replication.planning import load_pattern
from replication.properties import read_state

from ._figures import Check, Collected, Finding
from ._places import describe


def in_every_namespace() -> Check:
    """Every message was delivered in every namespace of the topology (all-active)."""

    def check(collected: Collected) -> Finding:
        namespaces = {n.name for n in collected.topology.namespaces}
        where: dict[str | None, set[str]] = {}
        for place, copy in collected.delivered():
            where.setdefault(copy.message_id, set()).add(place.namespace)
        short = sum(1 for e in collected.sent if where.get(e.message_id, set()) != namespaces)
        if short:
            return Finding(False, f"{short} messages not in all {len(namespaces)} regions")
        every = "both" if len(namespaces) == 2 else f"all {len(namespaces)}"
        return Finding(True, f"every message in {every} regions")

    return check


def every_replica(holds: Callable[[Envelope], bool], promise: str) -> Check:
    """Every replica (there must be some) satisfies ``holds``: ``promise`` says what it means."""

    def check(collected: Collected) -> Finding:
        replicas = [copy for _, copy in collected.replicas()]
        broken = sum(1 for copy in replicas if not holds(copy))
        if broken or not replicas:
            return Finding(False, f"not {promise}: {broken} of {len(replicas)} replicas")
        return Finding(True, promise)

    return check


def replica_time_to_live() -> Check:
    """Every replica carries the ``replicaTimeToLive`` its task is configured with (as the
    broker holds the replica; the original had none)."""

    with_time_to_live = tuple(
        load_pattern(name).options_model for name in ("active_passive", "spillover")
    )

    def check(collected: Collected) -> Finding:
        configured = {
            task.options.replica_time_to_live
            for task in collected.topology.resolved_tasks()
            if isinstance(task.options, with_time_to_live)
        }
        expected = next(iter(configured), None)
        if len(configured) != 1 or expected is None:
            return Finding(False, "the topology does not set one replicaTimeToLive")
        return every_replica(
            lambda copy: copy.time_to_live == expected,
            f"replicas expire after {_duration(expected)}",
        )(collected)

    return check


def replicas_without(*names: str) -> Check:
    """No replica carries these application properties (reduction: they stay in the region)."""
    return every_replica(
        lambda copy: not any(name in copy.application_properties for name in names),
        f"{', '.join(names)} removed",
    )


def replicas_with(properties: Mapping[str, PropertyValue]) -> Check:
    """Every replica carries these application property values (enrichment, normalization)."""
    return every_replica(
        lambda copy: all(copy.application_properties.get(k) == v for k, v in properties.items()),
        ", ".join(f"{k}={v}" for k, v in properties.items()) + " set",
    )


def replicas_have(*names: str) -> Check:
    """Every replica carries these application properties, whatever their values."""
    return every_replica(
        lambda copy: all(name in copy.application_properties for name in names),
        f"{', '.join(names)} on every copy",
    )


def routed_through(hub: str, *, origin: str) -> Check:
    """Every copy of a message from ``origin`` beyond ``hub`` went through it (crossed once)."""

    def check(collected: Collected) -> Finding:
        beyond = [
            read_state(copy.application_properties).path
            for place, copy in collected.replicas()
            if place.namespace != hub
            and read_state(copy.application_properties).origin == origin
            and place.namespace != origin
        ]
        direct = sum(1 for path in beyond if path[:2] != (origin, hub))
        if direct or not beyond:
            return Finding(False, f"{direct} of {len(beyond)} copies bypassed {hub}")
        return Finding(True, f"{origin} to {hub} once, fanned out there")

    return check


def order_per_key(sequence_property: str = "n") -> Check:
    """In every entity, the copies of each key (SessionId, else partition key) were stored in
    the order of their ``sequence_property``: the order the broker's SequenceNumbers give, not
    the order the showcase happened to receive them in.

    That is what replication promises and what Service Bus guarantees. A replica is in order
    when the target stored it after the replicas before it; the SequenceNumber the broker
    stamps on each stored message "represents the true order of arrival" (per partition on a
    partitioned entity, where one key stays in one partition;
    https://learn.microsoft.com/azure/service-bus-messaging/message-sequencing). Receiving is
    another matter: Service Bus guarantees FIFO delivery only within a session
    (https://learn.microsoft.com/azure/service-bus-messaging/message-sessions, "To realize a
    FIFO guarantee ... use sessions"), and a message a receiver gives back is delivered again
    after newer ones that were already on their way (the SDK maintainers say so in
    https://github.com/Azure/azure-sdk-for-net/issues/43026). The showcase's own reader gives
    messages back routinely: a receiver without prefetch releases the deliveries that reach it
    between two receive calls (``enhanced_message_received`` in azure-servicebus's
    ``_transport/_pyamqp_transport.py``), which on a loaded machine is where the rest of a
    batch lands after ``receive_messages`` returned with its first message; the queue then
    hands the released ones over after the newer ones.

    Of copies sharing a MessageId, the first stored counts (a re-send after a lost
    acknowledgement is a duplicate, not disorder). Copies without a SequenceNumber (only a
    copy the reader could not convert, which carries nothing else either) or without the
    property are left out.
    """

    def check(collected: Collected) -> Finding:
        first_stored: dict[tuple[str, str | None, str | None], tuple[int, int]] = {}
        for place, copy in collected.delivered():
            value = copy.application_properties.get(sequence_property)
            if copy.sequence_number is None or not isinstance(value, int):
                continue
            identity = (describe(place), copy.session_id or copy.partition_key, copy.message_id)
            stored = first_stored.get(identity)
            if stored is None or copy.sequence_number < stored[0]:
                first_stored[identity] = (copy.sequence_number, value)
        runs: dict[tuple[str, str | None], list[int]] = {}
        for (where, key, _), (_, value) in sorted(first_stored.items(), key=lambda i: i[1][0]):
            runs.setdefault((where, key), []).append(value)
        broken = [
            (where, key)
            for (where, key), values in runs.items()
            if any(b <= a for a, b in itertools.pairwise(values))
        ]
        if broken or not runs:
            first = f": {broken[0][1]} in {broken[0][0]}" if broken else ""
            noun = "key" if len(broken) == 1 else "keys"
            return Finding(False, f"order broken for {len(broken)} {noun}{first}")
        keys = len({key for _, key in runs})
        places = len({where for where, _ in runs})
        where = f" x {places} entities" if places > 1 else ""
        return Finding(True, f"order kept for {keys} keys{where}")

    return check


def split_by_place() -> Check:
    """How many replicas each namespace received (informational: always holds)."""

    def check(collected: Collected) -> Finding:
        counts = Counter(place.namespace for place, _ in collected.replicas())
        return Finding(True, ", ".join(f"{n} to {where}" for where, n in sorted(counts.items())))

    return check


def processed_once() -> Check:
    """The scenario's own application processed each message it published exactly once, on
    whichever namespace it read then (the failover consumer's promise, with its skip helper):
    none missing, none processed twice. Counted from the copies it took, not from its log."""

    def check(collected: Collected) -> Finding:
        times = Counter(copy.message_id for _, copy in collected.processed)
        lost = sum(1 for expected in collected.sent if expected.message_id not in times)
        duplicates = sum(n - 1 for n in times.values() if n > 1)
        skipped = len(collected.skipped_by_helper)
        figures = {
            "processed": len(times),
            "lost": lost,
            "duplicates": duplicates,
            "skipped_by_helper": skipped,
        }
        text = (
            f"{len(times)} consumed, {lost} lost, {duplicates} duplicates "
            f"({skipped} skipped by the helper)"
        )
        return Finding(bool(collected.sent) and not lost and not duplicates, text, figures)

    return check


def _duration(value: timedelta) -> str:
    seconds = int(value.total_seconds())
    if seconds % 60 == 0:
        return f"{seconds // 60} min"
    return f"{seconds} s"


__all__ = [
    "every_replica",
    "in_every_namespace",
    "order_per_key",
    "processed_once",
    "replica_time_to_live",
    "replicas_have",
    "replicas_with",
    "replicas_without",
    "routed_through",
    "split_by_place",
]

"""What a showcase scenario is: an example topology, what to publish there, what must happen.

A :class:`Scenario` names one topology of ``examples/`` and a ``drive`` function. The showcase
serves the topology's namespaces on the local emulator, runs its tasks with the local host and
calls ``drive`` with a :class:`Stage`, through which the scenario publishes messages (saying,
for each one, where a copy must arrive or why it must be parked) and breaks things (a namespace
killed and restarted). Then the showcase reads every entity the topology's applications read and
counts (:mod:`._figures`); ``checks`` look at the copies for what the pattern promises beyond
arrival: a TTL on the replica, order per key, the route a copy took.

A scenario may run an application of its own instead (the failover drill's publisher and
consumer): it tells the stage which messages that application published and where they must
arrive (:meth:`Stage.expect`) and hands over every copy its consumer took from an entity
(:meth:`Stage.consumed`), so that they are counted with what the showcase reads there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from replication.envelope import Envelope, PropertyValue
from replication.topology import Topology

from ._figures import Check


class Stage(Protocol):
    """What a scenario's ``drive`` can do while its topology's tasks run."""

    @property
    def topology(self) -> Topology:
        """The scenario's topology, as loaded (tasks split into lanes)."""
        ...

    @property
    def settings(self) -> Mapping[str, str]:
        """The app settings (connection strings) that point the topology at the emulator."""
        ...

    def publish(
        self,
        namespace: str,
        entity: str,
        messages: Sequence[Envelope],
        *,
        expect: Iterable[str],
        parked: str | None = None,
    ) -> None:
        """Send ``messages`` to ``namespace/entity`` in order, as an application does, and
        record that a copy of each must arrive in every ``expect`` place
        (``"namespace/entity[/subscription]"``) and, with ``parked``, be parked with that
        reason. Messages need distinct MessageIds."""
        ...

    def expect(self, message_ids: Iterable[str], *, places: Iterable[str]) -> None:
        """Record messages the scenario's own clients published (each acknowledged by a
        broker) and that a copy of each must arrive in every one of ``places``, as
        :meth:`publish` does for the messages it sends."""
        ...

    def consumed(self, place: str, copies: Sequence[Envelope], *, processed: bool) -> None:
        """Copies the scenario's own application took from ``place`` (an entity applications
        read), as received: ``processed`` by it, or completed by its skip helper as already
        processed. They count as what ``place`` held, with what the showcase reads there."""
        ...

    def measured(
        self, text: str, *, ok: bool = True, figures: Mapping[str, float] | None = None
    ) -> None:
        """A figure the scenario measured itself, which no broker holds (how long a switch
        took): shown in the verdict; ``ok=False`` fails the scenario."""
        ...

    def kill(self, namespace: str) -> None:
        """SIGKILL the emulator process serving ``namespace`` (one of ``isolated``)."""
        ...

    def restart(self, namespace: str) -> None:
        """Start ``namespace`` again on its port, with what it had persisted."""
        ...

    def pause(self, seconds: float) -> None:
        """Wait, while the tasks keep running."""
        ...

    def say(self, text: str) -> None:
        """Show what the scenario is doing now (the progress display's line)."""
        ...


@dataclass(frozen=True)
class Scenario:
    """One scenario of the showcase (see the module docstring).

    ``name`` is what ``--only`` takes; ``example`` a file name under ``examples/``;
    ``failing_consumers`` maps a place the scenario's application reads to the messages that
    application fails on (abandoned until the broker dead-letters them); ``isolated``
    namespaces get an emulator process of their own, so that ``drive`` can kill them; with
    ``audit``, the Spark duplicate audit runs over what the consumer entities held;
    ``needs_azurite``: the scenario starts Azurite (the failover drill's binding store).
    """

    name: str
    title: str
    example: str
    drive: Callable[[Stage], None]
    checks: tuple[Check, ...] = ()
    failing_consumers: Mapping[str, Callable[[Envelope], bool]] = field(default_factory=dict)
    isolated: tuple[str, ...] = ()
    audit: bool = False
    needs_azurite: bool = False
    timeout: float = 120.0
    """Seconds from the first publish until the scenario gives up waiting for copies, plus the
    longest lock duration of its entities (:func:`~._runner.redelivery_allowance`)."""


def message(
    message_id: str,
    properties: Mapping[str, PropertyValue] | None = None,
    *,
    session: str | None = None,
    key: str | None = None,
) -> Envelope:
    """A small JSON message with MessageId ``message_id``, application ``properties``, a
    SessionId ``session`` and a partition key ``key``."""
    return Envelope(
        body=b'{"id": "' + message_id.encode() + b'"}',
        message_id=message_id,
        content_type="application/json",
        session_id=session,
        partition_key=key,
        application_properties=properties or {},
    )


__all__ = ["Scenario", "Stage", "message"]

"""Run scenarios: serve, replicate, drive, then drain and count; several side by side.

One scenario (:func:`run_scenario`):

1. its topology's tasks run in a :class:`~replication.hosts.local.LocalHost` against its
   namespaces on the shared emulator (:mod:`._emulators`), with the real SDKs;
2. ``drive`` publishes and breaks things through a :class:`Stage` (or runs an application of
   its own and hands over what that application published and took from the entities);
3. every entity its applications read, and every parking queue, is read over and over
   (:class:`~replication.transport.consumers.EntityConsumer`, the scenario's failing consumers
   among them) until every expected copy is there and no task has handled a message for
   :data:`QUIET_SECONDS`, or the scenario's ``timeout`` has passed; then the dead-letter queues
   once;
4. :func:`~._figures.count` makes the figures from what was read;
5. an audited scenario's capture tasks (:mod:`._audit`) have written at least as many copies of
   each topic as its consumer subscriptions held (waited for, within the same deadline), and
   the Spark audit starts over their files. The audit and the figures thus come from two
   independent reads of the same brokers.

A scenario that raises (an emulator that does not start, a send the broker refuses) becomes a
row with its error; the others go on. :func:`run_scenarios` runs up to ``parallel`` at once: the
emulator and the local host each take one of two cores, and most of a scenario's time is
waiting (for a lock to expire, a namespace to come back, a quiet period).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from replication.envelope import Envelope
from replication.hosts.local import LocalHost
from replication.settings import Settings
from replication.topology import EntityRef, Topology, capture_sources
from replication.transport.consumers import EntityConsumer
from replication.transport.senders import SenderFactory

from ._audit import SparkAudit, audit_command, capture_folders, capture_settings
from ._display import Reporter
from ._emulators import ShowcaseEmulators
from ._figures import Collected, Expectation, Figures, Finding, count
from ._places import Places, describe, place, places_of
from ._scenario import Scenario

logger = logging.getLogger(__name__)

QUIET_SECONDS = 2.0
"""No task handled a message for this long: replication has settled."""
READ_WAIT = 0.3
"""How long one read of an entity waits for a message before it moves to the next entity."""


@dataclass
class Outcome:
    """A scenario's result: its figures, or the error that stopped it, and its audit."""

    scenario: Scenario
    figures: Figures | None
    seconds: float
    error: str | None = None
    audit: SparkAudit | None = None


class _Stage:
    """The :class:`~._scenario.Stage` of one running scenario."""

    def __init__(
        self,
        scenario: Scenario,
        topology: Topology,
        settings: Mapping[str, str],
        places: Places,
        emulators: ShowcaseEmulators,
        reporter: Reporter,
    ) -> None:
        self._scenario = scenario
        self._topology = topology
        self._settings = settings
        self._places = places
        self._emulators = emulators
        self._reporter = reporter
        self._factory = SenderFactory(
            topology, Settings.from_environ(settings, connections=topology.connections)
        )
        self.sent: list[Expectation] = []
        self.consumptions: list[tuple[EntityRef, list[Envelope], bool]] = []
        self.findings: list[Finding] = []

    @property
    def topology(self) -> Topology:
        return self._topology

    @property
    def settings(self) -> Mapping[str, str]:
        return self._settings

    def publish(
        self,
        namespace: str,
        entity: str,
        messages: Sequence[Envelope],
        *,
        expect: Iterable[str],
        parked: str | None = None,
    ) -> None:
        places = self._consumer_places(expect)
        self._factory.sender(namespace, entity).send(list(messages))
        self.sent += [Expectation(str(m.message_id), places, parked) for m in messages]

    def expect(self, message_ids: Iterable[str], *, places: Iterable[str]) -> None:
        where = self._consumer_places(places)
        self.sent += [Expectation(message_id, where) for message_id in message_ids]

    def consumed(self, place: str, copies: Sequence[Envelope], *, processed: bool) -> None:
        (ref,) = self._consumer_places([place])
        self.consumptions.append((ref, list(copies), processed))

    def measured(
        self, text: str, *, ok: bool = True, figures: Mapping[str, float] | None = None
    ) -> None:
        self.findings.append(Finding(ok, text, dict(figures or {})))

    def _consumer_places(self, texts: Iterable[str]) -> frozenset[EntityRef]:
        places = frozenset(place(text) for text in texts)
        unknown = [describe(p) for p in places if p not in self._places.consumers]
        if unknown:
            raise ValueError(
                f"scenario {self._scenario.name}: {', '.join(unknown)} is not an entity "
                f"applications read in {self._scenario.example}"
            )
        return places

    def kill(self, namespace: str) -> None:
        self._emulators.process(self._scenario.name, namespace).kill()

    def restart(self, namespace: str) -> None:
        self._emulators.process(self._scenario.name, namespace).start()

    def pause(self, seconds: float) -> None:
        time.sleep(seconds)

    def say(self, text: str) -> None:
        logger.info("%s: %s", self._scenario.name, text)
        self._reporter.update(self._scenario.name, text)

    def close(self) -> None:
        self._factory.close()


class _Readers:
    """One :class:`EntityConsumer` per place a scenario reads, opened on first use.

    Places are read side by side, one thread each: opening and closing a receiver link is
    mostly waiting for the broker (about half a second each against the emulator), and a read
    of an empty entity is all waiting."""

    def __init__(
        self,
        scenario: Scenario,
        topology: Topology,
        places: Places,
        settings: Mapping[str, str],
    ) -> None:
        failing = {place(text): fails for text, fails in scenario.failing_consumers.items()}
        read = Settings.from_environ(settings, connections=topology.connections)
        self._open: dict[EntityRef, EntityConsumer] = {}
        self._make: Callable[[EntityRef], EntityConsumer] = lambda ref: EntityConsumer(
            topology.namespace(ref.namespace),
            ref,
            settings=read,
            sessions=ref in places.sessions,
            fails=failing.get(ref),
        )
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=len(places.consumers + places.parking + places.dead_letter_queues) or 1,
            thread_name_prefix=f"read-{scenario.name}",
        )

    def take(
        self, refs: Sequence[EntityRef], wait: float
    ) -> list[tuple[EntityRef, list[Envelope]]]:
        """What each of ``refs`` holds now (see :meth:`EntityConsumer.take`)."""
        for ref in refs:
            if ref not in self._open:
                self._open[ref] = self._make(ref)
        futures = [(ref, self._pool.submit(self._open[ref].take, wait)) for ref in refs]
        return [(ref, future.result()) for ref, future in futures]

    def close(self) -> None:
        for consumer in self._open.values():
            self._pool.submit(_close_quietly, consumer)
        self._pool.shutdown(wait=True)


def _close_quietly(consumer: EntityConsumer) -> None:
    try:
        consumer.close()
    except Exception as error:  # a broker that went away; nothing left to read anyway
        logger.debug("closing %s: %s", consumer.ref.describe(), error)


def run_scenario(
    scenario: Scenario,
    topology: Topology,
    emulators: ShowcaseEmulators,
    reporter: Reporter,
    *,
    output: Path,
    show_audit: bool = False,
) -> Outcome:
    """Run one scenario (see the module docstring); never raises for the scenario's own
    failures, which become the outcome's ``error``."""
    started = time.monotonic()
    reporter.begin(scenario.name, scenario.title)
    try:
        collected = _run(scenario, topology, emulators, reporter, output)
        figures = count(collected, scenario.checks)
        audit = _start_audit(collected, output, show_audit) if scenario.audit else None
    except Exception as error:
        logger.exception("scenario %s failed", scenario.name)
        reporter.end(scenario.name, str(error), ok=False)
        return Outcome(scenario, None, time.monotonic() - started, error=str(error))
    problems = figures.problems()
    summary = "; ".join(problems) if problems else f"{figures.replicated} replicated"
    reporter.end(scenario.name, summary, ok=not figures.failed)
    return Outcome(scenario, figures, time.monotonic() - started, audit=audit)


def _run(
    scenario: Scenario,
    topology: Topology,
    emulators: ShowcaseEmulators,
    reporter: Reporter,
    output: Path,
) -> Collected:
    settings = {**emulators.settings(scenario.name), **capture_settings(output)}
    places = places_of(topology)
    collected = Collected(topology, places, [])
    stage = _Stage(scenario, topology, settings, places, emulators, reporter)
    readers = _Readers(scenario, topology, places, settings)
    try:
        with LocalHost(topology, settings) as host:
            stage.say("publishing")
            deadline = time.monotonic() + scenario.timeout + redelivery_allowance(topology)
            scenario.drive(stage)
            driven = time.monotonic()
            collected.sent = stage.sent
            collected.measured = stage.findings
            for ref, copies, processed in stage.consumptions:
                collected.add(ref, copies)
                mine = collected.processed if processed else collected.skipped_by_helper
                mine += [(ref, copy) for copy in copies]
            expected = sum(len(e.places) + bool(e.parked) for e in stage.sent)
            while True:
                for ref, copies in readers.take(places.read_while_running, READ_WAIT):
                    collected.add(ref, copies)
                missing = len(collected.missing())
                stage.say(f"replicating: {expected - missing}/{expected} copies arrived")
                if (missing == 0 and _quiet(host, driven) >= QUIET_SECONDS) or (
                    time.monotonic() > deadline
                ):
                    break
            stage.say("reading the dead-letter queues")
            for ref, copies in readers.take(places.dead_letter_queues, READ_WAIT):
                collected.add(ref, copies)
            _wait_for_captures(host, collected, deadline, stage)
            stage.say("stopping its tasks")
    finally:
        readers.close()
        stage.close()
    return collected


def redelivery_allowance(topology: Topology) -> float:
    """Seconds a copy can be held back without being lost: the longest lock duration of the
    topology's queues and subscriptions.

    A message whose settlement did not reach the broker (a task's or a reader's receive link
    that failed, a completion whose confirmation timed out on a loaded machine) stays locked
    and comes back only when its lock expires, as on Service Bus; the scenario waits that long
    more before it counts a copy as lost."""
    durations = [
        entity.lock_duration
        for namespace in topology.namespaces
        for entity in [
            *namespace.queues,
            *(subscription for topic in namespace.topics for subscription in topic.subscriptions),
        ]
    ]
    return max(durations, default=timedelta(0)).total_seconds()


def _quiet(host: LocalHost, since: float) -> float:
    """Seconds since any task of ``host`` last settled a batch or failed, or since ``since``."""
    last = max((status.last_activity for status in host.status.values()), default=since)
    return time.monotonic() - max(last, since)


def _wait_for_captures(
    host: LocalHost, collected: Collected, deadline: float, stage: _Stage
) -> None:
    """Until each capture task has written and completed at least as many copies as any
    consumer subscription of its topic held (the capture subscription takes everything the
    topic holds), or ``deadline``; what is still missing then, the audit reports."""
    wanted = {
        capture.name: max(
            (
                len(copies)
                for ref, copies in collected.held.items()
                if (ref.namespace, ref.entity) == (capture.region, capture.source.entity)
                and not ref.dead_letter_queue
            ),
            default=0,
        )
        for capture in capture_sources(collected.topology)
    }
    while True:
        behind = {n: w for n, w in wanted.items() if host.status[n].messages < w}
        if not behind or time.monotonic() > deadline:
            return
        stage.say(f"capturing: {len(behind)} of {len(wanted)} topics behind")
        time.sleep(READ_WAIT)


def _start_audit(collected: Collected, output: Path, show_output: bool) -> SparkAudit:
    """Start the Spark audit over the regions' captures."""
    command = audit_command(collected.topology, capture_folders(collected.topology, output), output)
    return SparkAudit(command, output, show_output=show_output)


def run_scenarios(
    scenarios: Sequence[tuple[Scenario, Topology]],
    emulators: ShowcaseEmulators,
    reporter: Reporter,
    *,
    output: Path,
    parallel: int,
    show_audit: bool = False,
) -> list[Outcome]:
    """Every scenario, up to ``parallel`` at once; outcomes in the order given. On Ctrl-C the
    scenarios not started yet are dropped and the interrupt goes on (the caller's emulators
    stop, which ends the running ones)."""
    pool = concurrent.futures.ThreadPoolExecutor(
        max_workers=max(1, parallel), thread_name_prefix="scenario"
    )
    futures = [
        pool.submit(
            run_scenario,
            scenario,
            topology,
            emulators,
            reporter,
            output=output,
            show_audit=show_audit,
        )
        for scenario, topology in scenarios
    ]
    try:
        return [future.result() for future in futures]
    except KeyboardInterrupt:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    finally:
        pool.shutdown(wait=False)


@contextlib.contextmanager
def serving(
    scenarios: Sequence[tuple[Scenario, Topology]], workdir: Path
) -> Iterator[ShowcaseEmulators]:
    """The emulator processes of ``scenarios`` for the length of the block."""
    with ShowcaseEmulators(
        {scenario.name: (topology, scenario.isolated) for scenario, topology in scenarios},
        workdir,
    ) as emulators:
        yield emulators


__all__ = ["QUIET_SECONDS", "Outcome", "run_scenario", "run_scenarios", "serving"]

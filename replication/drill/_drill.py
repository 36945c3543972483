"""A failover drill on this machine: kill the primary, switch, keep the traffic going, restore
the primary, fail back, and measure what the applications saw.

:func:`run_drill` starts one emulator process per namespace of the topology, Azurite and the
replicator (:func:`replication.drill._processes.drill_site`), then runs :func:`drill` there.
:func:`drill` needs only a :class:`DrillSite` (namespaces it can kill and restart, and the
settings that reach them and the binding store), so the showcase runs the same drill on its own
emulators and local host (``replication.showcase.scenarios.failover``). It starts sample
applications (:class:`~replication.drill._apps.SampleApp`) on the first active-passive (or
all-active) pair of Service Bus entities and of event hubs it finds (or the ones it is given):
a publisher and a consumer each, written with :mod:`replication.failover`. Then, per mode:

- **planned**: steady traffic; a planned ``failover`` of both applications
  (:func:`~replication.failover.switching.switch`); the primaries are killed (maintenance);
  traffic on the secondaries; the primaries restored; a planned ``failback``; traffic.
- **forced**: steady traffic; the primaries killed (SIGKILL: a crash); at once a forced
  ``failover`` (the publishers may also move on their own after their unavailability window);
  traffic on the secondaries; the primaries restored; a planned ``failback``; traffic.
- **hung primary** (``hang="primary"``): the forced drill with the primaries frozen (SIGSTOP:
  connections open, nothing answers, as a region that goes silent) instead of killed, and
  thawed (SIGCONT) instead of restarted.
- **hung store** (``hang="store"``): steady traffic; the binding store (Azurite, which also
  holds the checkpoints) frozen for ``store_freeze`` seconds; meanwhile a forced ``failover`` is
  tried, which must give up with exit code 3 within its deadline; the store thawed; the forced
  ``failover`` again; traffic; a planned ``failback``; traffic.

Every client and switch has the deadline ``call_timeout`` (5 s here, against the library's
10 s default, as the window and the poll interval are shorter than their defaults too). Per
phase the report gives the longest ``receive`` call of the Service Bus consumer, and per switch
command its duration.

After each phase the publishers pause and the drill waits for the consumers to catch up, then
computes the phase's figures (:mod:`replication.drill._figures`). A planned drill that lost a
message, and any drill with a message still lost at the end, is a finding.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import io
import json
import logging
import tempfile
import threading
import time
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from replication.exceptions import ConfigurationError, ReplicationError
from replication.exit_codes import ExitCode, exit_code_for
from replication.failover import FailoverStore
from replication.failover._plan import Direction, replication_pairs
from replication.failover.switching import switch
from replication.topology import NamespaceKind, Topology

from ._apps import SampleApp
from ._figures import Delivery, Done, PhaseFigures, phase_figures
from ._processes import drill_site

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True, slots=True)
class DrillSettings:
    """How long each part of the drill lasts and how fast the applications go."""

    steady: float = 6.0
    traffic: float = 10.0
    interval: float = 0.05
    unavailability_window: timedelta = timedelta(seconds=3)
    poll_interval: timedelta = timedelta(seconds=1)
    catch_up: float = 60.0
    quiet: float = 8.0
    call_timeout: timedelta = timedelta(seconds=5)
    store_freeze: float = 10.0


@dataclasses.dataclass(frozen=True, slots=True)
class Pick:
    """One application of the drill: its entity, what it reads, and the pair."""

    kind: NamespaceKind
    app: str
    entity: str
    reader: str | None
    primary: str
    secondary: str


class Hang(enum.StrEnum):
    """What a hang drill freezes."""

    PRIMARY = "primary"
    STORE = "store"


STORE_FROZEN = "failover while the store hangs"
"""The switch-code key prefix of the attempt a hung-store drill expects to give up (exit 3)."""


@dataclasses.dataclass(slots=True)
class DrillReport:
    mode: str
    applications: dict[str, Pick]
    failover: dict[str, PhaseFigures]
    failback: dict[str, PhaseFigures]
    lost_at_end: dict[str, list[str]]
    switch_codes: dict[str, int]
    switch_output: list[str]
    switch_seconds: dict[str, float] = dataclasses.field(default_factory=dict)
    """How long each switch command took, keyed like ``switch_codes``."""
    records: dict[str, tuple[list[Done], list[Done]]] = dataclasses.field(default_factory=dict)
    """Per application, every acknowledged publish and every processed message."""
    deliveries: dict[str, list[Delivery]] = dataclasses.field(default_factory=dict)
    """Per Service Bus application, every copy its consumer was handed, as received."""

    @property
    def findings(self) -> bool:
        lost_in_phases = any(
            figures.lost for phase in (self.failover, self.failback) for figures in phase.values()
        )
        planned_loss = self.mode == "planned" and lost_in_phases
        failed_switch = any(
            code != (ExitCode.UNAVAILABLE if key.startswith(STORE_FROZEN) else ExitCode.OK)
            for key, code in self.switch_codes.items()
        )
        return planned_loss or failed_switch or any(self.lost_at_end.values())

    def as_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "applications": {
                kind: {
                    "app": pick.app,
                    "entity": pick.entity,
                    "reader": pick.reader,
                    "primary": pick.primary,
                    "secondary": pick.secondary,
                }
                for kind, pick in self.applications.items()
            },
            "failover": {kind: f.as_json() for kind, f in self.failover.items()},
            "failback": {kind: f.as_json() for kind, f in self.failback.items()},
            "lost_at_end": {kind: len(ids) for kind, ids in self.lost_at_end.items()},
            "lost_at_end_messages": self.lost_at_end,
            "switch_exit_codes": self.switch_codes,
            "switch_seconds": self.switch_seconds,
        }


def pick_applications(topology: Topology) -> dict[str, Pick]:
    """The drill's applications: per namespace kind, the first replicated entity and what an
    application reads there (a subscription or consumer group no task reads)."""
    picks: dict[str, Pick] = {}
    task_readers = {
        (t.source.namespace, t.source.entity, t.source.subscription or t.source.consumer_group)
        for t in topology.tasks
    }
    for pair in replication_pairs(topology, None):
        kind = topology.namespace(pair.source).kind
        if kind.value in picks:
            continue
        source = topology.namespace(pair.source)
        reader: str | None = None
        if kind is NamespaceKind.EVENTHUBS:
            hub = next(h for h in source.event_hubs if h.name == pair.source_ref.entity)
            groups = [
                g for g in hub.consumer_groups if (pair.source, hub.name, g) not in task_readers
            ]
            reader = groups[0] if groups else "$Default"
        else:
            topic = next((t for t in source.topics if t.name == pair.source_ref.entity), None)
            if topic is not None:
                free = [
                    s.name
                    for s in topic.subscriptions
                    if (pair.source, topic.name, s.name) not in task_readers
                ]
                if not free:
                    continue
                reader = free[0]
        picks[kind.value] = Pick(
            kind, f"drill-{pair.source_ref.entity}", pair.source_ref.entity, reader,
            pair.source, pair.target,
        )  # fmt: skip
    if not picks:
        raise ConfigurationError(
            "the drill needs an active_passive (or all_active) task copying a Service Bus queue "
            "or topic (with a subscription no task reads) or an event hub to another namespace"
        )
    return picks


@runtime_checkable
class DrillSite(Protocol):
    """Where a drill runs: the topology's namespaces, served so that they can be killed."""

    @property
    def environ(self) -> Mapping[str, str]:
        """The app settings: each namespace's ``connection`` setting and
        ``REPLICATION_FAILOVER_STORAGE`` (the Blob Storage of the binding store)."""
        ...

    def kill(self, namespace: str) -> None:
        """SIGKILL the process serving ``namespace`` (what it acknowledged survives)."""
        ...

    def restart(self, namespace: str) -> None:
        """Serve ``namespace`` again, on the same port, with what it had persisted."""
        ...

    def say(self, text: str) -> None:
        """Report progress."""
        ...


@runtime_checkable
class HangSite(DrillSite, Protocol):
    """A site that can also make a namespace or the store hang (the hang drills)."""

    def freeze(self, namespace: str) -> None:
        """SIGSTOP the process serving ``namespace``: connections stay open, nothing answers."""
        ...

    def thaw(self, namespace: str) -> None:
        """SIGCONT it."""
        ...

    def freeze_store(self) -> None:
        """SIGSTOP the binding store (and the checkpoint store with it)."""
        ...

    def thaw_store(self) -> None:
        """SIGCONT it."""
        ...


def run_drill(
    topology_path: Path,
    topology: Topology,
    *,
    forced: bool,
    hang: Hang | None = None,
    settings: DrillSettings = DrillSettings(),
    workdir: Path | None = None,
    progress: Any = None,
    transforms: str | None = None,
) -> DrillReport:
    """Run the drill (see the module docstring) on processes of its own and return its report;
    ``progress`` (a text stream) gets one line per step. ``hang`` makes it a hang drill
    (forced). ``transforms`` (``MODULE:NAME``) is the registry the replicator's ``run`` loads for
    transforms registered in code."""
    picks = pick_applications(topology)
    with contextlib.ExitStack() as stack:
        directory = workdir or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        site = stack.enter_context(
            drill_site(topology_path, topology, directory, progress, transforms)
        )
        return drill(topology, site, picks, forced=forced, hang=hang, settings=settings)


def drill(
    topology: Topology,
    site: DrillSite,
    picks: Mapping[str, Pick],
    *,
    forced: bool,
    hang: Hang | None = None,
    settings: DrillSettings = DrillSettings(),
) -> DrillReport:
    """The drill's steps (see the module docstring) with the applications of ``picks`` on
    ``site``, where replication already runs; returns its report.

    Raises:
        ConfigurationError: a hang drill on a site that cannot freeze (not a
            :class:`HangSite`).
    """
    if hang is not None and not isinstance(site, HangSite):
        raise ConfigurationError(f"this site cannot make the {hang.value} hang")
    with contextlib.ExitStack() as stack:
        return _Drill(topology, dict(picks), forced or hang is not None, hang, settings, site).run(
            stack
        )


class _Drill:
    def __init__(
        self,
        topology: Topology,
        picks: dict[str, Pick],
        forced: bool,
        hang: Hang | None,
        settings: DrillSettings,
        site: DrillSite,
    ) -> None:
        self.topology = topology
        self.picks = picks
        self.forced = forced
        self.hang = hang
        self.settings = settings
        self.site = site
        self.switch_codes: dict[str, int] = {}
        self.switch_seconds: dict[str, float] = {}
        self.switch_output: list[str] = []

    @property
    def mode(self) -> str:
        if self.hang is not None:
            return f"hung {self.hang.value}"
        return "forced" if self.forced else "planned"

    def _hang_site(self) -> HangSite:
        assert isinstance(self.site, HangSite)  # checked by drill()
        return self.site

    def _outage(self, environ: dict[str, str], store: FailoverStore, primaries: set[str]) -> None:
        """The failover phase's outage and switch, per mode."""
        names = ", ".join(sorted(primaries))
        if self.hang is Hang.PRIMARY:
            for name in primaries:
                self._hang_site().freeze(name)
            self.site.say(f"froze {names} (SIGSTOP)")
            self._switch_all(environ, store, Direction.FAILOVER, force=True)
        elif self.hang is Hang.STORE:
            frozen = time.monotonic()
            self._hang_site().freeze_store()
            self.site.say("froze the binding store (SIGSTOP)")
            self._switch_all(environ, store, Direction.FAILOVER, force=True, label=STORE_FROZEN)
            time.sleep(max(0.0, self.settings.store_freeze - (time.monotonic() - frozen)))
            self._hang_site().thaw_store()
            self.site.say("thawed the binding store")
            self._switch_all(environ, store, Direction.FAILOVER, force=True)
        elif self.forced:
            for name in primaries:
                self.site.kill(name)
            self.site.say(f"killed {names}")
            self._switch_all(environ, store, Direction.FAILOVER, force=True)
        else:
            self._switch_all(environ, store, Direction.FAILOVER, force=False)
            for name in primaries:
                self.site.kill(name)
            self.site.say(f"killed {names} (maintenance)")

    def _restore(self, primaries: set[str]) -> None:
        names = ", ".join(sorted(primaries))
        if self.hang is Hang.STORE:
            self.site.say(f"{names} never stopped")
            return
        for name in primaries:
            if self.hang is Hang.PRIMARY:
                self._hang_site().thaw(name)
            else:
                self.site.restart(name)
        self.site.say(f"restored {names}")

    def run(self, stack: contextlib.ExitStack) -> DrillReport:
        environ = dict(self.site.environ)
        storage = environ["REPLICATION_FAILOVER_STORAGE"]
        store = FailoverStore.from_connection_string(storage, timeout=self.settings.call_timeout)
        stack.callback(store.close)
        apps = {
            kind: self._app(pick, _pair(environ, self.topology, pick), store, storage)
            for kind, pick in self.picks.items()
        }
        for app in apps.values():
            app.start()
            stack.callback(app.stop)
        time.sleep(self.settings.steady)
        self.site.say("steady traffic done")
        primaries = {pick.primary for pick in self.picks.values()}

        start = time.monotonic()
        skipped = {kind: app.skipped for kind, app in apps.items()}
        self._outage(environ, store, primaries)
        failover = self._phase(apps, start, skipped, target="secondary")
        for app in apps.values():
            app.resume()

        start = time.monotonic()
        skipped = {kind: app.skipped for kind, app in apps.items()}
        self._restore(primaries)
        self._switch_all(environ, store, Direction.FAILBACK, force=False)
        failback = self._phase(apps, start, skipped, target="primary")
        for app in apps.values():  # publishers paused: what they sent is all there is
            app.stop()
        lost_at_end = {
            kind: sorted(
                {d.message_id for d in app.published} - {d.message_id for d in app.processed}
            )
            for kind, app in apps.items()
        }
        return DrillReport(
            mode=self.mode,
            applications=self.picks,
            failover=failover,
            failback=failback,
            lost_at_end=lost_at_end,
            switch_codes=self.switch_codes,
            switch_output=self.switch_output,
            switch_seconds=self.switch_seconds,
            records={
                kind: (list(app.published), list(app.processed)) for kind, app in apps.items()
            },
            deliveries={
                kind: list(app.deliveries)
                for kind, app in apps.items()
                if app.kind == NamespaceKind.SERVICEBUS.value
            },
        )

    def _app(
        self, pick: Pick, namespaces: dict[str, str], store: FailoverStore, storage: str
    ) -> SampleApp:
        return SampleApp(
            kind=pick.kind.value,
            app=pick.app,
            entity=pick.entity,
            reader=pick.reader,
            namespaces=namespaces,
            store=store,
            storage=storage,
            interval=self.settings.interval,
            unavailability_window=self.settings.unavailability_window,
            poll_interval=self.settings.poll_interval,
            call_timeout=self.settings.call_timeout,
        )

    def _switch_all(
        self,
        environ: dict[str, str],
        store: FailoverStore,
        direction: Direction,
        *,
        force: bool,
        label: str | None = None,
    ) -> None:
        def one(kind: str, pick: Pick) -> None:
            out = io.StringIO()
            target = pick.secondary if direction is Direction.FAILOVER else pick.primary
            key = f"{label or direction.value} {kind}"
            began = time.monotonic()
            try:
                code = switch(
                    self.topology,
                    store,
                    environ,
                    app=pick.app,
                    instance=None,
                    entity=pick.entity,
                    target=target,
                    direction=direction,
                    force=force,
                    settle=2 * self.settings.poll_interval.total_seconds(),
                    timeout=120,
                    call_timeout=self.settings.call_timeout.total_seconds(),
                    out=out,
                )
            except ReplicationError as error:  # as the command line reports it
                out.write(f"error: {error}\n")
                code = exit_code_for(error)
            except Exception as error:
                out.write(f"error: {error}\n")
                code = ExitCode.CONFIGURATION
            self.switch_codes[key] = int(code)
            self.switch_seconds[key] = round(time.monotonic() - began, 3)
            self.switch_output += [f"{kind}: {line}" for line in out.getvalue().splitlines()]

        threads = [
            threading.Thread(target=one, args=(kind, pick)) for kind, pick in self.picks.items()
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        kind_text = "forced" if force else "planned"
        self.site.say(f"{kind_text} {label or direction.value}: {self.switch_codes}")

    def _phase(
        self, apps: dict[str, SampleApp], start: float, skipped: dict[str, int], *, target: str
    ) -> dict[str, PhaseFigures]:
        """Traffic for a while, then the publishers paused (until :meth:`SampleApp.resume`)
        while the consumers catch up; the phase's figures."""
        time.sleep(self.settings.traffic)
        paused = {kind: app.pause() for kind, app in apps.items()}
        self._catch_up(apps)
        end = time.monotonic()
        figures = {
            kind: phase_figures(
                app.published,
                app.processed,
                start=start,
                paused=paused[kind],
                end=end,
                skipped=app.skipped - skipped[kind],
                target=getattr(self.picks[kind], target),
                receives=app.receives if app.kind == NamespaceKind.SERVICEBUS.value else None,
            )
            for kind, app in apps.items()
        }
        self.site.say("phase done: " + json.dumps({k: f.lost for k, f in figures.items()}))
        return figures

    def _catch_up(self, apps: dict[str, SampleApp]) -> None:
        deadline = time.monotonic() + self.settings.catch_up
        last = sum(len(app.processed) for app in apps.values())
        quiet_since = time.monotonic()
        while time.monotonic() < deadline:
            if all(app.caught_up() for app in apps.values()):
                return
            now = sum(len(app.processed) for app in apps.values())
            if now != last:
                last, quiet_since = now, time.monotonic()
            elif time.monotonic() - quiet_since > self.settings.quiet:
                return  # what is missing now stays missing (stranded in a dead namespace)
            time.sleep(0.2)


def _pair(environ: Mapping[str, str], topology: Topology, pick: Pick) -> dict[str, str]:
    """The connection strings of ``pick``'s pair, primary first."""
    return {
        name: environ[topology.namespace(name).connection]
        for name in (pick.primary, pick.secondary)
    }


__all__ = [
    "STORE_FROZEN",
    "DrillReport",
    "DrillSettings",
    "DrillSite",
    "Hang",
    "HangSite",
    "Pick",
    "drill",
    "pick_applications",
    "run_drill",
]

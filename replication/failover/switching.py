"""Carrying out a switch of an application's clients: the body of ``python -m replication
failover|failback`` (and of the drill).

:func:`switch` plans the switch (:func:`~replication.failover._plan.plan_switch`), prints the
steps and the figures an operator needs (per replication task what ``python -m replication
status`` prints: state, backlog, oldest unreplicated message, heartbeats, the RPO of a failover
now; for a failback the messages published directly to the namespace it must drain), and,
unless it is a dry run, takes the binding document's blob lease and writes the bindings in the
plan's order, waiting in between for replication to catch up or the namespace to drain (polling
once a second, printing each change of the figures). The figures are read by
:class:`~replication.operations.FiguresReader`, the one reader ``status`` uses too. It returns
the exit code; see :mod:`replication.cli.failover` for their meaning.

**Nothing hangs.** Every read of a namespace is bounded by ``call_timeout`` (default 10 s; the
reader's :class:`~replication.transport.inspection.SourceInspector`), every store call by the
store's own deadline: a namespace that does not answer is "unknown", never a wait. A forced
switch writes the bindings first and counts afterwards, so its clients move within the store's
deadline whatever state the old namespace is in.

**Giving up restores what was found.** The first write of a switch records the exact rule of
its clients as it found it (:class:`~replication.failover._bindings.RestorePoint`); a switch
that takes over from one that died uses that record's, not what the dead one had changed. A
planned switch that gives up puts that rule back, except where it would bind a role to a
namespace that did not answer the switch's last read: that role stays where the switch had
moved it (publishers) or where it was (consumers), and the command says so.
"""

from __future__ import annotations

import os
import socket
import sys
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import TextIO

from replication.exceptions import FailoverStoreError
from replication.exit_codes import ExitCode
from replication.operations import Backlog, FiguresReader, task_lines
from replication.runtime import describe
from replication.settings import Settings
from replication.topology import NamespaceKind, Topology
from replication.transport.deadlines import DEFAULT_CALL_TIMEOUT
from replication.transport.failover import BindingLease, BlobFailoverStore

from ._bindings import (
    BindingDocument,
    RestorePoint,
    Role,
    SwitchKind,
    SwitchRecord,
    new_document,
    parse_bindings,
    render_bindings,
)
from ._plan import Direction, SwitchPlan, plan_switch
from ._processed import ProcessedLog
from ._state import ConsumerState

DEFAULT_SETTLE = 10.0
"""Seconds the clients get to follow a binding change: twice their default poll interval."""
DEFAULT_TIMEOUT = 300.0
POLL_SECONDS = 1.0
SHOWN_IDS = 50


def switch(
    topology: Topology,
    store: BlobFailoverStore,
    environ: Mapping[str, str],
    *,
    app: str,
    instance: str | None,
    entity: str | None,
    target: str,
    direction: Direction,
    force: bool = False,
    dry_run: bool = False,
    settle: float = DEFAULT_SETTLE,
    timeout: float = DEFAULT_TIMEOUT,
    call_timeout: float = DEFAULT_CALL_TIMEOUT.total_seconds(),
    out: TextIO = sys.stdout,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Plan and (unless ``dry_run``) carry out one switch; returns the exit code.

    Raises:
        FailoverStoreError: the store could not be read or written (the CLI exits 3).
        SwitchRefusedError, SwitchInProgressError: the switch is not possible now.
    """
    data, _ = store.read_bindings(app, None)
    document = parse_bindings(data, source=store.describe(app)) if data else None
    plan = plan_switch(
        topology,
        document,
        app=app,
        instance=instance,
        entity=entity,
        target=target,
        direction=direction,
        force=force,
        settle=timedelta(seconds=settle),
        document_source=store.describe(app),
    )
    kind = "forced" if force else "planned"
    print(f"{kind} {direction.value} of {plan.client}: {plan.source} -> {plan.target}", file=out)
    for number, step in enumerate(plan.steps, 1):
        print(f"  {number}. {step}", file=out)
    if plan.source == plan.target:
        return ExitCode.OK
    reader = FiguresReader(
        topology,
        Settings.from_environ(environ, connections=topology.connections),
        call_timeout=call_timeout,
    )
    try:
        runner = _Switch(plan, topology, store, reader, out, sleep)
        if dry_run or not force:
            # A forced switch reads nothing before it moves the clients (see _forced); the
            # planned one moves nothing before its figures are out.
            runner.report_figures()
        if dry_run:
            print("dry run: nothing changed", file=out)
            return ExitCode.OK
        with store.switch_lease(app, holder=_holder()) as lease:
            return runner.execute(lease, settle=settle, timeout=timeout)
    finally:
        reader.close()


def _holder() -> str:
    return f"{socket.gethostname()}/{os.getpid()}"


class _Switch:
    """One switch being carried out (see :func:`switch`)."""

    def __init__(
        self,
        plan: SwitchPlan,
        topology: Topology,
        store: BlobFailoverStore,
        reader: FiguresReader,
        out: TextIO,
        sleep: Callable[[float], None],
    ) -> None:
        self.plan = plan
        self.topology = topology
        self.store = store
        self.reader = reader
        self.out = out
        self.sleep = sleep
        self.started = time.monotonic()

    def say(self, text: str) -> None:
        print(f"[{time.monotonic() - self.started:6.1f} s] {text}", file=self.out, flush=True)

    # -- figures -----------------------------------------------------------------------------

    def report_figures(self) -> None:
        """What an operator needs before pressing the button."""
        plan = self.plan
        if plan.direction is Direction.FAILOVER:
            for task in plan.replication_tasks:
                report = self.reader.task(task)
                backlog = (
                    str(report.backlog)
                    if report.backlog is not None
                    else f"unknown ({report.error or report.backlog_unknown})"
                )
                self.say(
                    f"replication backlog of {task}: {backlog} "
                    f"(the RPO of a failover now: {report.rpo})"
                )
                for line in task_lines(report):  # what status prints for the task
                    print(f"           {line}", file=self.out, flush=True)
        else:
            for where, count in self._direct().items():
                self.say(f"published directly to {where} and not consumed yet: {count}")

    def _backlogs(self) -> dict[str, Backlog | str]:
        backlogs: dict[str, Backlog | str] = {}
        self.reader.refresh()  # a namespace that failed at the last poll is asked again
        for task in self.plan.replication_tasks:
            try:
                backlogs[task] = self.reader.backlog(task)
            except Exception as error:
                backlogs[task] = f"unknown ({describe(error)})"
        return backlogs

    def _direct(self) -> dict[str, object]:
        self.reader.refresh()
        try:
            return dict(self.reader.direct_messages(self.plan.drain))
        except Exception as error:
            return {ref.describe(): f"unknown ({describe(error)})" for ref in self.plan.drain}

    # -- the switch --------------------------------------------------------------------------

    def execute(self, lease: BindingLease, *, settle: float, timeout: float) -> int:
        plan = self.plan
        data = lease.read()
        document = (
            parse_bindings(data, source=self.store.describe(plan.app))
            if data
            else new_document(plan.app, list(plan.namespaces), plan.namespaces[0])
        )
        restore = document.restore_point(plan.instance, plan.entity)
        interrupted = document.switch
        if interrupted is not None:
            self.say(
                f"taking over switch {interrupted.id} started {interrupted.started_at} "
                f"by {interrupted.by}, which did not finish (its lease expired)"
            )
            same_clients = (interrupted.instance, interrupted.entity) == (
                plan.instance,
                plan.entity,
            )
            if same_clients and interrupted.restore is not None:
                restore = interrupted.restore  # what that switch found, before it changed it
        record = SwitchRecord(
            id=uuid.uuid4().hex[:12],
            kind=SwitchKind.FORCED if plan.force else SwitchKind.PLANNED,
            source=plan.source,
            target=plan.target,
            instance=plan.instance,
            entity=plan.entity,
            phase="started",
            started_at=datetime.now(UTC),
            by=lease.holder,
            restore=restore,
        )
        if plan.force:
            return self._forced(lease, document, record)
        document = self._write(
            lease,
            document.bound(
                instance=plan.instance,
                entity=plan.entity,
                publish=plan.target,
                default=plan.namespaces[0],
            ).with_switch(record.model_copy(update={"phase": "publishers moved"})),
        )
        self.say(f"publishers of {plan.client} now bound to {plan.target}")
        self.sleep(settle)
        waited = (
            self._wait_for_replication(timeout)
            if plan.direction is Direction.FAILOVER
            else self._wait_for_drain(timeout)
        )
        if not waited:
            self._give_up(lease, document, record, restore, timeout)
            return ExitCode.UNAVAILABLE
        self._bind(
            lease,
            document,
            record.model_copy(update={"phase": "consumers moved", "unreplicated": 0}),
            {"consume": plan.target},
            outcome="done",
        )
        self.say(f"consumers of {plan.client} now bound to {plan.target}; done")
        return ExitCode.OK

    def _give_up(
        self,
        lease: BindingLease,
        document: BindingDocument,
        record: SwitchRecord,
        restore: RestorePoint,
        timeout: float,
    ) -> None:
        """Put back the rule the switch found, except a role it would bind to a namespace that
        did not answer the last read: that role stays as it is now."""
        plan = self.plan
        silent = self.reader.unreachable
        restored = document.restored(plan.instance, plan.entity, restore)
        roles: dict[str, str] = {}
        kept: list[str] = []
        for role in Role:
            now = document.resolve(plan.instance, plan.entity, role) or plan.namespaces[0]
            back = restored.resolve(plan.instance, plan.entity, role) or plan.namespaces[0]
            if back in silent and back != now:
                kept.append(
                    f"{role.value}ers stay on {now} ({back} did not answer: {silent[back]})"
                )
                roles[role.value] = now
            else:
                roles[role.value] = back
        finished = record.model_copy(
            update={"finished_at": datetime.now(UTC), "outcome": "timed out"}
        )
        if kept:
            final = restored.bound(
                instance=plan.instance, entity=plan.entity, default=plan.namespaces[0], **roles
            )
        else:
            final = restored
        self._write(lease, final.with_switch(finished))
        where = ", ".join(f"{role}ers on {name}" for role, name in roles.items())
        self.say(
            f"gave up after {timeout:g} s; bindings of {plan.client} restored to what the switch "
            f"found ({where})"
            + (f"; {'; '.join(kept)}" if kept else "")
            + ". Retry, or use --force to accept the backlog as lost"
        )

    def _forced(self, lease: BindingLease, document: BindingDocument, record: SwitchRecord) -> int:
        plan = self.plan
        # The clients first: the old namespace is most often gone or silent, and every read of
        # it would only delay them. What it had not replicated is counted afterwards.
        finished = record.model_copy(update={"phase": "moved"})
        document = self._bind(
            lease,
            document,
            finished,
            {"publish": plan.target, "consume": plan.target},
            outcome="done",
        )
        self.say(
            f"publishers and consumers of {plan.client} now bound to {plan.target}; "
            f"counting what {plan.source} had not replicated"
        )
        lost = self._count_unreplicated()
        last = document.history[-1] if document.history else None
        if last is not None and last.id == record.id:
            try:
                self._write(
                    lease,
                    document.with_last_switch(last.model_copy(update={"unreplicated": lost})),
                )
            except FailoverStoreError as error:
                self.say(f"the count was not recorded in the binding document: {error}")
        if plan.direction is Direction.FAILOVER and lost is not None:
            self._report_rpo()
        self.say("done")
        return ExitCode.OK

    def _count_unreplicated(self) -> int | None:
        """Print (and return) what the source holds that the target does not have: each
        task's backlog, named (the MessageIds, or the events per partition)."""
        plan = self.plan
        total = 0
        if plan.direction is Direction.FAILOVER and not plan.replication_tasks:
            self.say(
                f"{plan.source} does not replicate to {plan.target} in the topology: what it "
                "holds cannot be counted; RPO unknown"
            )
            return None
        if plan.direction is Direction.FAILBACK:
            for where, count in self._direct().items():
                self.say(f"left unconsumed in {where} (published there directly): {count}")
                if not isinstance(count, int):
                    return None
                total += count
            return total
        self.reader.refresh()
        for task in plan.replication_tasks:
            try:
                backlog = self.reader.backlog(task)
                if backlog.count is None:
                    raise ValueError(backlog.unknown)
            except Exception as error:
                self.say(
                    f"{task}: {plan.source} cannot be read ({describe(error)}): what it accepted "
                    "and did not replicate cannot be counted now (RPO unknown); it stays there "
                    "and is replicated when the namespace returns"
                )
                return None
            if backlog.partitions:
                lags = {p.partition: p.lag for p in backlog.partitions if p.lag}
                detail = ", ".join(f"partition {p}: {n}" for p, n in sorted(lags.items()))
                self.say(
                    f"{task}: {backlog.count} events not replicated"
                    + (f" ({detail})" if lags else "")
                )
            else:
                ids = backlog.message_ids
                shown = ", ".join(ids[:SHOWN_IDS]) + (" ..." if len(ids) > SHOWN_IDS else "")
                self.say(
                    f"{task}: {backlog.count} messages not replicated"
                    + (f": {shown}" if ids else "")
                )
            total += backlog.count
        return total

    def _report_rpo(self) -> None:
        """After a forced failover: what else the old namespace holds that the target lacks
        (parked and dead-lettered messages) and the RPO as ``status`` computes it."""
        self.reader.refresh()
        for task in self.plan.replication_tasks:
            report = self.reader.task(task, heartbeats=False)
            if report.rpo.messages is None or report.backlog is None:
                why = report.error or report.backlog_unknown
                self.say(f"{task}: {self.plan.source} cannot be read now ({why}): RPO unknown")
                continue
            kept = report.rpo.messages - report.backlog.value
            if kept:
                self.say(
                    f"{task}: {kept} parked or dead-lettered in {self.plan.source}, not "
                    "replicated either (redrive them there)"
                )
            # Re-read after the clients moved: while the old namespace still answers, replication
            # goes on, so this can be less than the count printed at the switch.
            self.say(f"{task}: still not replicated after the switch (RPO now): {report.rpo}")

    def _bind(
        self,
        lease: BindingLease,
        document: BindingDocument,
        record: SwitchRecord,
        roles: dict[str, str],
        *,
        outcome: str,
    ) -> BindingDocument:
        """Write the final bindings of the switch with ``record`` finished as ``outcome``."""
        finished = record.model_copy(update={"finished_at": datetime.now(UTC), "outcome": outcome})
        bound = document.bound(
            instance=self.plan.instance,
            entity=self.plan.entity,
            default=self.plan.namespaces[0],
            **roles,
        )
        return self._write(lease, bound.with_switch(finished))

    def _write(self, lease: BindingLease, document: BindingDocument) -> BindingDocument:
        lease.write(render_bindings(document))
        return document

    def _wait(self, timeout: float, check: Callable[[], tuple[bool, str]]) -> bool:
        deadline = time.monotonic() + timeout
        last = ""
        while True:
            done, figures = check()
            if figures != last:
                self.say(figures)
                last = figures
            if done:
                return True
            if time.monotonic() >= deadline:
                return False
            self.sleep(POLL_SECONDS)

    def _wait_for_replication(self, timeout: float) -> bool:
        def check() -> tuple[bool, str]:
            backlogs = self._backlogs()
            done = all(isinstance(b, Backlog) and b.count == 0 for b in backlogs.values())
            text = ", ".join(f"{task} {backlog}" for task, backlog in backlogs.items())
            return done, f"replication backlog: {text}"

        return self._wait(timeout, check)

    def _wait_for_drain(self, timeout: float) -> bool:
        hubs = [
            ref
            for ref in self.plan.drain
            if self.topology.namespace(ref.namespace).kind is NamespaceKind.EVENTHUBS
        ]
        self.reader.refresh()
        marks = {ref.entity: self.reader.last_enqueued(ref) for ref in hubs}

        def check() -> tuple[bool, str]:
            direct = self._direct()
            behind = self._hub_consumers_behind(marks)
            done = all(count == 0 for count in direct.values()) and not any(behind.values())
            parts = [f"{where}: {count} left" for where, count in direct.items()]
            parts += [f"{hub}: {count} events to go" for hub, count in behind.items()]
            return done, "drain: " + (", ".join(parts) or "nothing to drain")

        return self._wait(timeout, check)

    def _hub_consumers_behind(self, marks: dict[str, dict[str, int]]) -> dict[str, int]:
        """Per event hub, the events the application's consumers (their stored positions on the
        source) still have to read up to the marks taken after the publishers left."""
        behind: dict[str, int] = {}
        for client in self.store.state_clients(f"{self.plan.app}/"):
            hub = client.split("/")[2] if client.count("/") >= 3 else None
            if hub not in marks:
                continue
            state = ConsumerState(ProcessedLog(), self.store, client)
            state.load()
            for partition, mark in marks[hub].items():
                position = state.positions.get((self.plan.source, partition))
                done = -1 if position is None else position.sequence
                behind[hub] = behind.get(hub, 0) + max(0, mark - done)
        return behind


__all__ = ["DEFAULT_SETTLE", "DEFAULT_TIMEOUT", "switch"]

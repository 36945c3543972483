"""``python -m replication redrive``: move one task's parked or dead-lettered messages back into
replication, through the task's own runner (never by re-publishing into its source).

``--from dead-letter`` (the default for Service Bus sources) reads the dead-letter queue of the
task's source queue or subscription; ``--from parked`` (the default for event hub sources) reads
the task's ``deadLetterTarget`` and takes only the messages this task parked there.
``--dry-run`` only peeks and prints what would be done with each message: redriven as parked,
its original re-read from the event hub, or left parked because it is a notice whose original
cannot be restored (each named, with the reason); ``--max N`` redrives the oldest N.
What is read, held, completed and abandoned, and what that means for other tasks' messages in
a shared parking queue, is described in :mod:`replication.operations` (``_redrive``).

Exit codes: ``OK`` when the run finished (the counts say what happened to each message);
``CONFIGURATION`` for an unknown task or a ``--from`` the task cannot have; ``UNAVAILABLE``
when the broker cannot be reached or a transient failure stopped the run (nothing is lost; run
it again). A progress bar is drawn when stdout is a terminal, plain lines otherwise.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import closing, contextmanager

from replication.exit_codes import ExitCode
from replication.operations import (
    ProgressCallback,
    RedriveOrigin,
    Redriver,
    RedriveReport,
    RedriveSource,
    RedriveStoppedError,
    Survey,
    redrive_source,
)
from replication.properties import format_timestamp
from replication.topology import NamespaceKind, Topology

from ._local_settings import apply_local_settings
from ._options import add_topology_option, positive_int, topology_of


def configure(parser: argparse.ArgumentParser) -> None:
    add_topology_option(parser)
    parser.add_argument("--task", required=True, metavar="NAME", help="the task to redrive")
    parser.add_argument(
        "--from",
        dest="origin",
        choices=[origin.value for origin in RedriveOrigin],
        help="the source's dead-letter queue or the task's deadLetterTarget (default: "
        "dead-letter for Service Bus sources, parked for event hubs)",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="only peek and print what would be redriven"
    )
    parser.add_argument(
        "--max", type=positive_int, metavar="N", help="redrive at most N messages, oldest first"
    )


def _origin(topology: Topology, args: argparse.Namespace, name: str) -> RedriveOrigin:
    if args.origin is not None:
        return RedriveOrigin(args.origin)
    task = next((t for t in topology.tasks if t.name == name), None)
    if task is not None and topology.namespace(task.source.namespace).kind is (
        NamespaceKind.EVENTHUBS
    ):
        return RedriveOrigin.PARKED
    return RedriveOrigin.DEAD_LETTER


def run(args: argparse.Namespace) -> int:
    topology = topology_of(args)
    apply_local_settings(args.topology, topology.connections)
    try:
        # A task of the file that runs as one lane per target is redriven lane by lane.
        names = [lane.name for lane in topology.lanes(args.task)]
    except KeyError:
        names = [args.task]
    sources = [redrive_source(topology, name, _origin(topology, args, name)) for name in names]
    return max(
        _redrive(topology, name, source, args) for name, source in zip(names, sources, strict=True)
    )


def _redrive(topology: Topology, name: str, source: RedriveSource, args: argparse.Namespace) -> int:
    with closing(Redriver(topology, source)) as redriver:
        try:
            survey = redriver.survey(limit=args.max)
        except RedriveStoppedError as error:
            print(f"error: {error}", file=sys.stderr)
            return ExitCode.UNAVAILABLE
        print(f"task {name}, {source.origin.value} messages in {source.label}:", flush=True)
        _print_survey(survey, dry_run=args.dry_run)
        if args.dry_run or not survey.wanted:
            return ExitCode.OK
        try:
            with _progress(len(survey.wanted)) as on_progress:
                report = redriver.redrive(survey, on_progress=on_progress)
        except RedriveStoppedError as error:
            _print_report(error.report, survey)
            print(f"error: {error}", file=sys.stderr)
            return ExitCode.UNAVAILABLE
    _print_report(report, survey)
    return ExitCode.OK


def _print_survey(survey: Survey, *, dry_run: bool) -> None:
    verb = "would redrive" if dry_run else "redriving"
    line = f"  {verb} {len(survey.wanted)} message(s)"
    if survey.first_enqueued is not None and survey.last_enqueued is not None:
        first, last = (
            format_timestamp(survey.first_enqueued),
            format_timestamp(survey.last_enqueued),
        )
        line += f", enqueued {first} to {last}"
    print(line)
    for reason, count in survey.reasons.most_common():
        print(f"    {reason}: {count}")
    if survey.rereads:
        verb = "would re-read" if dry_run else "re-reading"
        print(f"  of which {verb} the original from the event hub: {len(survey.rereads)}")
        for message_id, position in survey.rereads.values():
            print(f"    {message_id}: {position.describe()}")
    _print_refused(survey.refused, dry_run=dry_run)
    if survey.beyond_max:
        print(f"  left for a later run (--max): {survey.beyond_max}")
    if survey.others:
        print(
            f"  left for other tasks: {survey.others}, of which {survey.passed_over} lie before "
            "this task's last message (a redrive locks and abandons them: delivery count +1)"
        )
    print("", flush=True)


def _print_report(report: RedriveReport, survey: Survey) -> None:
    print(
        f"read {report.read}, forwarded {report.forwarded}, skipped {report.skipped}, "
        f"parked again {report.parked_again}, left for other tasks {report.left_for_other_tasks}"
    )
    extra = {
        "left in place (rejected, no deadLetterTarget)": report.rejected,
        "left in place (too large to park whole; a notice was parked)": report.kept_whole,
        "passed over (abandoned, delivery count +1)": report.passed_over,
        "not reached (run again)": report.not_reached,
    }
    for label, count in extra.items():
        if count:
            print(f"  {label}: {count}")
    # The survey's refusals were printed with the survey; these are the re-reads that failed.
    _print_refused(report.refused[len(survey.refused) :], dry_run=False)


def _print_refused(refused: list[tuple[str, str]], *, dry_run: bool) -> None:
    """The notices that stay parked (never sent as the message), one line each."""
    if not refused:
        return
    verb = "would leave" if dry_run else "left"
    print(f"  {verb} parked, original not restorable: {len(refused)}")
    for message_id, why in refused:
        print(f"    {message_id}: {why}")


@contextmanager
def _progress(total: int) -> Iterator[ProgressCallback]:
    """A rich progress bar on a terminal; otherwise one plain line per batch."""
    if not sys.stdout.isatty():

        def plain(report: RedriveReport) -> None:
            print(f"  {report.read}/{total} read", flush=True)

        yield plain
        return
    from rich.progress import Progress

    with Progress(transient=True) as bar:
        bar_task = bar.add_task("redriving", total=total)

        def draw(report: RedriveReport) -> None:
            bar.update(bar_task, completed=report.read)

        yield draw

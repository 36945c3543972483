"""``python -m replication drill --topology FILE [--planned|--forced|--hang WHAT]
[--transforms MODULE:NAME] [--call-timeout SECONDS] [--json]``: a failover drill.

Runs :func:`replication.drill.run_drill` on this machine (one emulator process per namespace,
Azurite (:func:`~replication.drill._processes.azurite_command`: ``$REPLICATION_AZURITE``,
``node_modules`` or ``PATH``), the replicator (``replication run``, with ``--transforms`` when
given), two sample applications written with :mod:`replication.failover`) and prints, for the
failover and the failback separately and per application: published, consumed, lost (each
named), RTO (longest time without a successful publish, and without a processed message),
duplicates the application saw with the skip helper and without it, the longest ``receive`` of
the Service Bus consumer, and the switch time per client; then each switch command's output and
duration. ``--hang primary`` freezes the primaries (SIGSTOP) instead of killing them, ``--hang
store`` freezes the binding store for a while (see :mod:`replication.drill._drill`).
``--json`` prints the same as one JSON object. Progress lines go to stderr.
``--call-timeout`` is the deadline of every client's and switch command's network call (5 s,
:class:`~replication.drill.DrillSettings`); raise it on a machine so loaded that an emulator
can take longer to answer.

Exit codes: ``OK``; ``FINDINGS`` (1) when a planned drill lost a message, a switch command
failed, or a message is still missing at the end; ``CONFIGURATION`` (2) for a topology the drill
cannot use; ``UNAVAILABLE`` (3) when a process of the drill did not start.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import timedelta
from pathlib import Path

from replication.drill import DrillReport, DrillSettings, Hang, run_drill
from replication.drill._processes import DrillSetupError
from replication.exit_codes import ExitCode

from ._options import add_call_timeout_option, add_topology_option, topology_of

COLUMNS = (
    ("published", "published"),
    ("consumed", "consumed"),
    ("lost", "lost"),
    ("RTO publish s", "rto_publish_seconds"),
    ("RTO consume s", "rto_consume_seconds"),
    ("dup. with helper", "duplicates_with_skip_helper"),
    ("dup. without", "duplicates_without_skip_helper"),
    ("longest receive s", "longest_receive_seconds"),
)


def configure(parser: argparse.ArgumentParser) -> None:
    add_topology_option(parser)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--planned", action="store_true", help="planned failover, then maintenance (default)"
    )
    mode.add_argument("--forced", action="store_true", help="kill the primary, then force")
    mode.add_argument(
        "--hang",
        choices=[hang.value for hang in Hang],
        help="freeze the primaries (SIGSTOP) instead of killing them, or the binding store for "
        "a while; then force",
    )
    add_call_timeout_option(parser, default=DrillSettings().call_timeout)
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    topology = topology_of(args)  # as its replicator's run loads it, --transforms included
    settings = DrillSettings(call_timeout=timedelta(seconds=args.call_timeout))
    try:
        report = run_drill(
            Path(args.topology),
            topology,
            forced=args.forced,
            hang=Hang(args.hang) if args.hang else None,
            settings=settings,
            progress=sys.stderr,
            transforms=args.transforms,
        )
    except DrillSetupError as error:
        print(f"error: {error}", file=sys.stderr)
        return ExitCode.UNAVAILABLE
    if args.json:
        print(json.dumps(report.as_json(), indent=2))
    else:
        print(render(report))
    return ExitCode.FINDINGS if report.findings else ExitCode.OK


def render(report: DrillReport) -> str:
    """The report as a table per phase, the switch output and the losses."""
    lines = [f"{report.mode} drill"]
    for kind, pick in report.applications.items():
        reads = f" ({pick.reader})" if pick.reader else ""
        lines.append(
            f"  {kind}: {pick.app} on {pick.entity}{reads}, {pick.primary} -> {pick.secondary}"
        )
    # Each column one space wider than its widest header ("longest receive s"), so that no two
    # headers run together; the switch durations last, left-aligned under theirs.
    width = max(len(name) for name, _ in COLUMNS) + 1
    names = "".join(f"{name:>{width}}" for name, _ in COLUMNS)
    header = f"  {'phase':9} {'application':12}{names}"
    lines += ["", header + "  switch publisher / consumer s"]
    for phase, figures in (("failover", report.failover), ("failback", report.failback)):
        for kind, numbers in figures.items():
            values = numbers.as_json()
            cells = "".join(f"{values[key]!s:>{width}}" for _, key in COLUMNS)
            switch = numbers.switch_seconds
            lines.append(
                f"  {phase:9} {kind:12}{cells}  {switch['publisher']!s} / {switch['consumer']!s}"
            )
            if numbers.lost_messages:
                shown = ", ".join(numbers.lost_messages[:20])
                more = " ..." if len(numbers.lost_messages) > 20 else ""
                lines.append(f"      lost: {shown}{more}")
    lines += ["", "switch commands:"] + [f"  {line}" for line in report.switch_output]
    lines += [
        f"  {key}: exit {report.switch_codes[key]} after {seconds:.1f} s"
        for key, seconds in report.switch_seconds.items()
    ]
    missing = {kind: ids for kind, ids in report.lost_at_end.items() if ids}
    lines.append("")
    lines.append(
        "lost at the end: "
        + (
            ", ".join(f"{kind} {len(ids)}: {' '.join(ids[:20])}" for kind, ids in missing.items())
            or "none"
        )
    )
    return "\n".join(lines)

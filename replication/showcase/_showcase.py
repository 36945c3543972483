"""The showcase as a whole: choose scenarios, run them, print the table, write the figures.

``python -m replication demo`` (no ``--topology``) calls :func:`run_showcase`. It loads each
scenario's example topology, serves them all (:mod:`._emulators`), runs the scenarios side by
side (all at once unless ``parallel`` says fewer; they mostly wait, and the Spark audit of the
mesh, which starts as soon as the mesh is done, takes longer than all of them together) with
a progress display (:mod:`._runner`, :mod:`._display`), waits for the audit, and prints one
table and the audit's verdict. ``OUTPUT/showcase.json`` holds every
scenario's figures (what the end-to-end test reads), ``OUTPUT/showcase.log`` the library's log
(unless ``verbose``: then the log and Spark's output go to the terminal).

The exit code is :attr:`ExitCode.FINDINGS` when any scenario lost, looped or misplaced a
message, failed a check or could not run, or the audit found a message missing or looping.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rich.console import Console

from replication.drill import azurite_command
from replication.exceptions import ConfigurationError, ReplicationError
from replication.exit_codes import ExitCode
from replication.extras import require, require_java
from replication.layout import EXAMPLES
from replication.topology import Topology, capture_everywhere, load_topology

from ._audit import DEMO_CAPTURE, capture_root, clear_captures, healthy, summary_lines
from ._display import PLAIN_WIDTH, LiveReporter, PlainReporter, Row, results_table
from ._runner import Outcome, run_scenarios, serving
from ._scenario import Scenario
from .scenarios import SCENARIOS


def check_prerequisites(scenarios: Sequence[Scenario]) -> None:
    """Fail before anything starts when a chosen scenario needs what is not installed: the
    ``audit`` extra and Java for the Spark audit, Azurite for the failover drill.

    Raises:
        MissingExtraError, MissingProgramError, DrillSetupError: one line saying what to
            install.
    """
    if any(scenario.audit for scenario in scenarios):
        needed_by = "the demo's Spark audit (the mesh scenario)"
        require("audit", needed_by=needed_by)
        require_java(needed_by=needed_by)
    if any(scenario.needs_azurite for scenario in scenarios):
        azurite_command()


def choose(only: str | None) -> list[Scenario]:
    """Every scenario, or the one named ``only`` (ConfigurationError naming the choices)."""
    if only is None:
        return list(SCENARIOS)
    chosen = [s for s in SCENARIOS if s.name == only]
    if not chosen:
        names = ", ".join(s.name for s in SCENARIOS)
        raise ConfigurationError(f"--only {only}: no such scenario; choose one of {names}")
    return chosen


def run_showcase(
    *,
    only: str | None = None,
    scenarios: Sequence[Scenario] | None = None,
    output: Path = Path("demo-output"),
    parallel: int | None = None,
    verbose: bool = False,
    console: Console | None = None,
) -> int:
    """Run the showcase (see the module docstring), or the given ``scenarios`` instead of the
    registry's; returns the exit code."""
    scenarios = list(scenarios) if scenarios is not None else choose(only)
    parallel = parallel or len(scenarios)
    console = console or Console(width=None if sys.stdout.isatty() else PLAIN_WIDTH)
    check_prerequisites(scenarios)
    output.mkdir(parents=True, exist_ok=True)
    clear_captures(output)
    examples = EXAMPLES.folder()
    loaded = [(scenario, _load(examples / scenario.example, scenario)) for scenario in scenarios]
    started = time.monotonic()
    console.print(
        f"[bold]showcase[/]: {len(loaded)} scenarios on the local emulator, "
        f"up to {parallel} at a time; figures from draining what the brokers hold",
        highlight=False,
    )
    reporter = LiveReporter(console) if console.is_terminal else PlainReporter(console)
    with _log_to(None if verbose else output / "showcase.log"):
        with serving(loaded, output / "emulator") as emulators, reporter:
            outcomes = run_scenarios(
                _slowest_first(loaded),
                emulators,
                reporter,
                output=output,
                parallel=parallel,
                show_audit=verbose,
            )
        outcomes.sort(key=lambda o: [s.name for s in scenarios].index(o.scenario.name))
        audit = _wait_for_audit(outcomes, console)
    seconds = time.monotonic() - started
    console.print(results_table([_row(o) for o in outcomes]))
    failed = [o for o in outcomes if o.figures is None or o.figures.failed]
    audit_ok = audit is None or ("error" not in audit and healthy(audit))
    if audit is not None:
        report = output / "audit" / "report.html"
        captured = capture_root(output)
        console.print(
            f"[bold]Spark audit of the mesh[/] ({report}), from its capture tasks' files "
            f"({captured}):",
            highlight=False,
        )
        if "error" in audit:
            console.print(f"  [bold red]{audit['error']}[/]", highlight=False)
        else:
            for line in summary_lines(audit):
                console.print(line, highlight=False)
        console.print(
            "  verdict: every message replicated once, no loops"
            if audit_ok
            else "  [bold red]verdict: FAILED[/]"
        )
    _write_figures(output / "showcase.json", outcomes, audit, seconds)
    passed = not failed and audit_ok
    verdict = (
        f"[green]every scenario passed[/] in {seconds:.0f} s"
        if passed
        else f"[bold red]{len(failed)} scenario(s) failed[/]"
        + ("" if audit_ok else ", the audit found problems")
    )
    log = "" if verbose else f", the log in {output / 'showcase.log'}"
    console.print(f"{verdict}; figures in {output / 'showcase.json'}{log}", highlight=False)
    return ExitCode.OK if passed else ExitCode.FINDINGS


def _load(path: Path, scenario: Scenario) -> Topology:
    """The scenario's example; an audited one captured in every region (:data:`DEMO_CAPTURE`),
    so that its audit reads what capture tasks wrote, as it would in Azure."""
    topology = load_topology(path)
    return capture_everywhere(topology, DEMO_CAPTURE, str(path)) if scenario.audit else topology


def _slowest_first(loaded: Sequence[tuple[Scenario, Topology]]) -> list[tuple[Scenario, Topology]]:
    """The mesh first (its audit then overlaps the rest), then the scenarios that wait most."""
    waits = {"mesh": 0, "failover": 1, "outage": 2, "spillover": 3, "sessions": 4}
    return sorted(loaded, key=lambda pair: waits.get(pair[0].name, len(waits)))


def _wait_for_audit(outcomes: Sequence[Outcome], console: Console) -> dict[str, Any] | None:
    """The mesh's audit report; one that failed is a report with an ``error`` (not healthy)."""
    audits = [o.audit for o in outcomes if o.audit is not None]
    if not audits:
        return None
    try:
        with console.status("Spark audit of the mesh"):
            return audits[0].wait()
    except ReplicationError as error:
        return {"error": str(error)}


def _row(outcome: Outcome) -> Row:
    return Row(outcome.scenario.title, outcome.scenario.example, outcome.figures, outcome.error)


def _write_figures(
    path: Path, outcomes: Sequence[Outcome], audit: dict[str, Any] | None, seconds: float
) -> None:
    scenarios: dict[str, Any] = {}
    for outcome in outcomes:
        entry: dict[str, Any] = {
            "title": outcome.scenario.title,
            "example": f"examples/{outcome.scenario.example}",
            "seconds": round(outcome.seconds, 1),
        }
        if outcome.figures is None:
            entry["error"] = outcome.error
        else:
            figures = asdict(outcome.figures)
            figures["failed"] = outcome.figures.failed
            entry["figures"] = figures
        scenarios[outcome.scenario.name] = entry
    document = {"seconds": round(seconds, 1), "scenarios": scenarios, "audit": audit}
    path.write_text(json.dumps(document, indent=2) + "\n")


@contextlib.contextmanager
def _log_to(path: Path | None) -> Iterator[None]:
    """Send the root logger's records to ``path`` instead of the terminal (None: leave it)."""
    if path is None:
        yield
        return
    root = logging.getLogger()
    previous = root.handlers[:]
    handler = logging.FileHandler(path, mode="w", encoding="utf-8")
    handler.setFormatter(
        logging.Formatter("%(asctime)s %(levelname)s %(threadName)s %(name)s: %(message)s")
    )
    root.handlers = [handler]
    try:
        yield
    finally:
        root.handlers = previous
        handler.close()


__all__ = ["check_prerequisites", "choose", "run_showcase"]

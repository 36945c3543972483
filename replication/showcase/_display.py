"""What a person sees: a progress line per scenario while they run, then one table.

On a terminal the progress is a ``rich`` live display (a spinner, what each scenario is doing,
its time); elsewhere (CI, a pipe, the tests) one plain line per scenario when it ends, so a log
shows the same story without control characters. The table has one row per
scenario with the figures of :mod:`._figures` and a verdict: what the checks found when all is
well, what failed otherwise.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Protocol

from rich import box
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from ._figures import Figures

PLAIN_WIDTH = 140
"""Columns of the table when the output is not a terminal (rich would use 80 and wrap it)."""


class Reporter(Protocol):
    """Receives what the scenarios are doing (from several threads)."""

    def begin(self, name: str, title: str) -> None: ...

    def update(self, name: str, text: str) -> None: ...

    def end(self, name: str, text: str, *, ok: bool) -> None: ...


class LiveReporter:
    """A ``rich`` progress display, one line per scenario, while the block runs."""

    def __init__(self, console: Console) -> None:
        self._progress = Progress(
            SpinnerColumn(finished_text=""),
            TextColumn("{task.description:<28}"),
            TextColumn("{task.fields[state]}"),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        )
        self._rows: dict[str, TaskID] = {}
        self._lock = threading.Lock()

    def begin(self, name: str, title: str) -> None:
        with self._lock:
            self._rows[name] = self._progress.add_task(title, total=1, state="starting")

    def update(self, name: str, text: str) -> None:
        with self._lock:
            self._progress.update(self._rows[name], state=text)

    def end(self, name: str, text: str, *, ok: bool) -> None:
        mark = "[green]✓[/]" if ok else "[bold red]✗[/]"
        with self._lock:
            self._progress.update(self._rows[name], state=f"{mark} {text}", completed=1)

    def __enter__(self) -> LiveReporter:
        self._progress.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._progress.stop()


class PlainReporter:
    """One line per scenario as it ends (no live display)."""

    def __init__(self, console: Console) -> None:
        self._console = console
        self._started: dict[str, float] = {}
        self._titles: dict[str, str] = {}
        self._lock = threading.Lock()

    def begin(self, name: str, title: str) -> None:
        with self._lock:
            self._started[name] = time.monotonic()
            self._titles[name] = title

    def update(self, name: str, text: str) -> None:
        """Intermediate states are for live displays only."""

    def end(self, name: str, text: str, *, ok: bool) -> None:
        with self._lock:
            seconds = time.monotonic() - self._started.get(name, time.monotonic())
            mark = "ok" if ok else "FAILED"
            self._console.print(
                f"  {mark:<6} {self._titles.get(name, name):<22} {seconds:>3.0f} s  {text}",
                highlight=False,
            )

    def __enter__(self) -> PlainReporter:
        return self

    def __exit__(self, *_: object) -> None:
        return None


@dataclass(frozen=True)
class Row:
    """One scenario's line of the table: its figures, or why it could not run."""

    title: str
    example: str
    figures: Figures | None
    error: str | None = None


def results_table(rows: Sequence[Row]) -> Table:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, collapse_padding=True, padding=(0, 1))
    table.add_column("scenario\n[dim]examples/", no_wrap=True)
    for column in ("sent", "repli-\ncated", "loop-\nskipped"):
        table.add_column(column, justify="right")
    table.add_column("parked\n(reason)", overflow="fold")
    for column in ("lost", "dupli-\ncates"):
        table.add_column(column, justify="right")
    table.add_column("lag\np50 / p95", justify="right", no_wrap=True)
    table.add_column("verdict\n(checked on the copies)", ratio=1)
    for row in rows:
        name = Text(row.title)
        name.append(f"\n{row.example}", style="dim")
        figures = row.figures
        if figures is None:
            table.add_row(name, *[""] * 7, Text(f"✗ {row.error}", style="bold red"))
            continue
        table.add_row(
            name,
            str(figures.sent),
            str(figures.replicated),
            str(figures.skipped),
            "\n".join(f"{n} {reason}" for reason, n in figures.parked.items()) or "-",
            _count(figures.lost),
            _count(figures.duplicates, style="yellow"),
            _lag(figures),
            _verdict(figures),
        )
    return table


def _count(value: int, *, style: str = "bold red") -> Text:
    return Text(str(value), style=style if value else "")


def _lag(figures: Figures) -> str:
    if figures.lag_p50 is None or figures.lag_p95 is None:
        return "-"
    return f"{figures.lag_p50:.2f} / {figures.lag_p95:.2f} s"


def _verdict(figures: Figures) -> Text:
    if figures.failed:
        return Text("✗ " + "; ".join(figures.problems()), style="bold red")
    text = Text("✓ " + "; ".join(f.text for f in figures.findings), style="green")
    if figures.duplicates:
        text.append(f"; {figures.duplicates} duplicates (same MessageId)", style="yellow")
    return text


__all__ = ["PLAIN_WIDTH", "LiveReporter", "PlainReporter", "Reporter", "Row", "results_table"]

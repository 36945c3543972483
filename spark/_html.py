"""``report.html``: one self-contained page (inline CSS and SVG, no scripts, no network) that
answers "is my replication healthy?" from report.json's figures and the audit's charts.

Top to bottom: a verdict banner; the key figures with labels and units; a region x region lag
matrix (p50 / p95, coloured by p95); the lag distributions of all region pairs as small
multiples on one shared logarithmic axis; per region the copies held, and duplicates and missing
messages only when there are any; the first ``LISTED_IDS`` missing and looping message ids with
the CSV file that holds all of them; messages over time per region on a UTC time axis.

Every figure taken from report.json is written as ``<span data-key="PATH">TEXT</span>``, PATH
being its dotted path in report.json (``regions.weu.missing``), so a test can read the page
back and compare (``tests/spark/test_report_page.py``).
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from ._audit import (
    LAG_BINS_PER_DECADE,
    NEGATIVE_LAG_BIN,
    SMALLEST_LAG_BIN,
    Distributions,
    TimeAxis,
    lag_bin_bounds,
)

LISTED_IDS = 100
"""How many of the missing and looping messages the page lists (the CSV files hold all)."""


@dataclass(frozen=True)
class Listing:
    """Some rows of a CSV listing of message ids and the file that holds all of them."""

    file: str | None
    """The CSV file's name in its folder (``missing/`` or ``loops/``); None when there is
    nothing to list (and no file)."""
    rows: list[dict[str, str]]
    """The first ``LISTED_IDS`` rows, earliest first."""


@dataclass(frozen=True)
class Charts:
    """What the page shows beyond report.json: the audit's distributions and id listings."""

    distributions: Distributions
    axis: TimeAxis | None
    """The timeline's buckets (None: no copies at all)."""
    listings: dict[str, Listing] = field(default_factory=dict)
    """``missing`` and ``loops``."""


# ---------------------------------------------------------------- formatting

MINUS = "\u2212"


def count(value: int) -> str:
    """``12,345``."""
    return f"{value:,}".replace("-", MINUS)


def duration(seconds: float) -> str:
    """A lag as a person reads it, exact to the millisecond: ``750 ms``, ``1.5 s``,
    ``1 min 35.075 s``, ``2 h 0 min 5 s`` (negative: with U+2212, the minus sign)."""
    sign = MINUS if seconds < 0 else ""
    rest = round(abs(seconds), 3)
    if rest == 0:
        return "0 s"
    if rest < 1:
        return f"{sign}{rest * 1000:.0f} ms"
    hours, rest = divmod(rest, 3600)
    minutes, rest = divmod(rest, 60)
    parts = [f"{int(hours)} h"] if hours else []
    if hours or minutes:
        parts.append(f"{int(minutes)} min")
    parts.append(f"{round(rest, 3):g} s")
    return sign + " ".join(parts)


def _width(microseconds: int) -> str:
    """A bucket width: ``5 ms``, ``10 s``, ``5 min``, ``1 h``, ``2 d``."""
    seconds = microseconds / 1e6
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60), ("s", 1)):
        if seconds >= size:
            return f"{seconds / size:g} {unit}"
    return f"{seconds * 1000:g} ms"


def _figure(path: str, text: str) -> str:
    return f'<span data-key="{html.escape(path)}">{html.escape(text)}</span>'


def _row(label: str, cells: list[str]) -> str:
    """A table row: ``label`` (escaped here) and cells of HTML."""
    return f"<tr><td>{html.escape(label)}</td>{''.join(f'<td>{c}</td>' for c in cells)}</tr>"


def _utc(microseconds: int) -> datetime:
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=microseconds)


# ---------------------------------------------------------------- verdict

HEALTHY, WARNING, UNHEALTHY = "healthy", "warning", "unhealthy"


def verdict(report: dict[str, Any]) -> str:
    """``unhealthy`` when a message is missing or loops, ``warning`` when copies were late,
    invalid or skewed, else ``healthy``."""
    if report["missing_total"] or report["loops"]:
        return UNHEALTHY
    if report["late_records"] or report["clock_skew_suspects"] or report["invalid_records"]:
        return WARNING
    return HEALTHY


def _banner(report: dict[str, Any]) -> str:
    state = verdict(report)
    messages = _figure("unique_messages", count(report["unique_messages"]))
    if state == UNHEALTHY:
        title = "Not healthy"
        problems = [f"{messages} messages audited."]
        if report["missing_total"]:
            where = ", ".join(
                f"{html.escape(name)} {_figure(f'regions.{name}.missing', count(r['missing']))}"
                for name, r in report["regions"].items()
                if r["missing"]
            )
            problems.append(
                "Missing from a region that should hold them: "
                f"{_figure('missing_total', count(report['missing_total']))} ({where})."
            )
        if report["loops"]:
            problems.append(f"Looping: {_figure('loops', count(report['loops']))}.")
        detail = " ".join(problems)
    elif state == WARNING:
        title = "Healthy, with warnings"
        notes = [
            f"{_figure(key, count(report[key]))} {label}"
            for key, label in (
                ("late_records", "late copies"),
                ("clock_skew_suspects", "clock-skew suspects"),
                ("invalid_records", "invalid records"),
            )
            if report[key]
        ]
        detail = (
            f"All {messages} messages reached every region they should, without loops; "
            f"{', '.join(notes)}."
        )
    else:
        title = "Healthy"
        detail = (
            f"All {messages} messages reached every region they should; no loops, no late "
            "or invalid copies."
        )
    return f'<section class="banner {state}" id="verdict"><h1>{title}</h1><p>{detail}</p></section>'


# ---------------------------------------------------------------- key figures

KEY_FIGURES = (
    ("unique_messages", "messages", "distinct message ids"),
    ("total_records", "copies read", "records in all regions"),
    ("expected_replicas", "expected replicas", "copies the topology sends to other regions"),
    (
        "unexpected_duplicates",
        "unexpected duplicates",
        "a region holds a message twice, or a copy the topology sends none of",
    ),
    (
        "capture_repeats",
        "capture repeats",
        "one copy read twice (same sequence number and time): not a duplicate",
    ),
    ("missing_total", "missing", "a region lacks a message it should hold (per region)"),
    ("loops", "looping messages", "path names a namespace twice or too many hops"),
    ("late_records", "late copies", "after the watermark: a stream dedup misses them"),
    ("clock_skew_suspects", "clock-skew suspects", "replica enqueued before its origin"),
    ("invalid_records", "invalid records", "without message id or enqueue time"),
)

STREAMING_FIGURES = (
    ("micro_batches", "micro-batches"),
    ("max_state_rows", "largest state (rows)"),
    ("dropped_by_watermark", "rows dropped by the watermark"),
)


def _key_figures(report: dict[str, Any]) -> str:
    cards = "".join(
        f'<div class="card{" bad" if key in ("missing_total", "loops") and report[key] else ""}">'
        f'<div class="value">{_figure(key, count(report[key]))}</div>'
        f'<div class="label">{label}</div><div class="unit">{unit}</div></div>'
        for key, label, unit in KEY_FIGURES
    )
    # Every copy beyond a message's first is an expected replica or an unexpected duplicate
    # (or a copy of a message whose origin holds none): the old "duplicate copies" total, which
    # counted replicas as duplicates, stays in report.json and is spelled out here.
    beyond = (
        f'<p class="note">{_figure("duplicate_records", count(report["duplicate_records"]))} '
        "copies beyond each message's first: replicas are copies, not duplicates.</p>"
    )
    streaming = report.get("streaming")
    if streaming:
        cards += "".join(
            f'<div class="card"><div class="value">'
            f"{_figure(f'streaming.{key}', count(streaming[key]))}</div>"
            f'<div class="label">{label}</div><div class="unit">streaming mode</div></div>'
            for key, label in STREAMING_FIGURES
        )
    return f'<section class="cards">{cards}</section>{beyond}{_window(report)}'


def _window(report: dict[str, Any]) -> str:
    """The audited window (``--since`` / ``--until``), when the audit had one."""
    window = report.get("window")
    if not window:
        return ""
    since = _figure("window.since", window["since"]) if window["since"] else "the beginning"
    until = _figure("window.until", window["until"]) if window["until"] else "the end"
    return (
        f'<p class="note">Messages first enqueued from {since} until {until} (UTC); copies '
        f"read {_figure('window.margin_seconds', duration(window['margin_seconds']))} either "
        f"side. {_figure('window.files_read', count(window['files_read']))} capture files "
        f"read, {_figure('window.files_skipped', count(window['files_skipped']))} outside the "
        "window left unread.</p>"
    )


# ---------------------------------------------------------------- lag matrix

LAG_BANDS = (
    (1.0, "#dcfce7", "p95 ≤ 1 s"),
    (10.0, "#fef9c3", "≤ 10 s"),
    (60.0, "#fed7aa", "≤ 1 min"),
    (math.inf, "#fecaca", "> 1 min"),
)
"""Cell colours of the lag matrix by p95 (a replica's first copy behind its origin's)."""
SKEW_COLOUR = "#e9d5ff"
"""A pair whose p50 is negative: replicas enqueued before their origin (clock skew)."""


def _lag_colour(stats: dict[str, float]) -> str:
    if stats["p50"] < 0:
        return SKEW_COLOUR
    return next(colour for limit, colour, _ in LAG_BANDS if stats["p95"] <= limit)


def _lag_matrix(report: dict[str, Any]) -> str:
    regions, lags = list(report["regions"]), report["lag_seconds"]
    head = "".join(f"<th>to {html.escape(r)}</th>" for r in regions)
    rows = []
    for source in regions:
        cells = []
        for target in regions:
            pair = f"{source}->{target}"
            stats = lags.get(pair)
            if source == target:
                cells.append('<td class="diagonal">origin</td>')
            elif stats is None:
                cells.append('<td class="empty">no messages</td>')
            else:
                cells.append(
                    f'<td style="background:{_lag_colour(stats)}">'
                    f"p50 {_figure(f'lag_seconds.{pair}.p50', duration(stats['p50']))}<br>"
                    f"p95 {_figure(f'lag_seconds.{pair}.p95', duration(stats['p95']))}</td>"
                )
        rows.append(f"<tr><th>from {html.escape(source)}</th>{''.join(cells)}</tr>")
    legend = "".join(
        f'<span class="swatch" style="background:{colour}"></span>{html.escape(text)} '
        for _, colour, text in LAG_BANDS
    )
    legend += f'<span class="swatch" style="background:{SKEW_COLOUR}"></span>p50 below 0 (skew)'
    details = "".join(
        _row(
            pair.replace("->", " → "),
            [
                _figure(f"lag_seconds.{pair}.count", count(s["count"])),
                *(
                    _figure(f"lag_seconds.{pair}.{q}", duration(s[q]))
                    for q in ("p50", "p95", "p99", "max")
                ),
            ],
        )
        for pair, s in lags.items()
    )
    return (
        "<h2>Replication lag</h2><p>From a message's first copy in its origin region to its "
        "first copy in each other region (enqueue times).</p>"
        f'<table class="matrix"><tr><th></th>{head}</tr>{"".join(rows)}</table>'
        f'<p class="legend">{legend}</p>'
        '<table class="numbers"><tr><th>region pair</th><th>messages</th><th>p50</th>'
        f"<th>p95</th><th>p99</th><th>max</th></tr>{details}</table>"
    )


# ---------------------------------------------------------------- lag distributions

PANEL_WIDTH, PANEL_HEIGHT = 300, 140
MARGIN_LEFT, MARGIN_BOTTOM, MARGIN_TOP = 36, 28, 22


def _tick_label(index: int) -> str:
    """The label of a lag histogram tick: below the negative bin, else at a bin's left edge."""
    if index == NEGATIVE_LAG_BIN:
        return "< 0"
    if index == SMALLEST_LAG_BIN:
        return "0"
    seconds = 10 ** (index // LAG_BINS_PER_DECADE)
    return f"{seconds * 1000:g} ms" if seconds < 1 else f"{seconds:g} s"


def _lag_ticks(bins: list[int]) -> list[tuple[float, str]]:
    """Where to label the shared lag axis, in bins from its left edge: each power of ten at
    its bin's left edge, "< 0" under the negative bin (which leaves no room for the 0 at the
    next bin's edge), and the axis' ends when no label is near them."""
    ticks = [
        (bins.index(b) + (0.5 if b == NEGATIVE_LAG_BIN else 0.0), _tick_label(b))
        for b in bins
        if b == NEGATIVE_LAG_BIN
        or (b % LAG_BINS_PER_DECADE == 0 and b != SMALLEST_LAG_BIN)
        or (b == SMALLEST_LAG_BIN and NEGATIVE_LAG_BIN not in bins)
    ]
    ends = ((0.0, lag_bin_bounds(bins[0])[0]), (float(len(bins)), lag_bin_bounds(bins[-1])[1]))
    for position, seconds in ends:
        if math.isfinite(seconds) and all(abs(position - p) >= 2 for p, _ in ticks):
            ticks.append((position, duration(seconds)))
    return ticks


def _lag_distributions(distributions: Distributions, lags: dict[str, Any]) -> str:
    histograms = distributions.lag_histograms
    if not histograms:
        return ""
    low = min(min(bins) for bins in histograms.values())
    high = max(max(bins) for bins in histograms.values())
    # One shared x axis (every pair's bins) and y axis (share of that pair's messages).
    bins = list(range(low, high + 1))
    shares = {
        pair: {b: n / sum(counts.values()) for b, n in counts.items()}
        for pair, counts in histograms.items()
    }
    top = max(share for pair in shares.values() for share in pair.values())
    plot_w = PANEL_WIDTH - MARGIN_LEFT - 8
    plot_h = PANEL_HEIGHT - MARGIN_TOP - MARGIN_BOTTOM
    slot = plot_w / len(bins)
    ticks = _lag_ticks(bins)
    panels = []
    for pair, share in shares.items():
        parts = [
            f'<text x="{MARGIN_LEFT}" y="14" font-weight="bold" font-size="12">'
            f"{html.escape(pair.replace('->', ' → '))}</text>"
            f'<text x="{PANEL_WIDTH - 8}" y="14" text-anchor="end">'
            f"{count(lags[pair]['count'])} messages</text>",
            f'<line x1="{MARGIN_LEFT}" y1="{MARGIN_TOP + plot_h}" x2="{PANEL_WIDTH - 8}" '
            f'y2="{MARGIN_TOP + plot_h}" stroke="#888"/>',
            f'<text x="{MARGIN_LEFT - 4}" y="{MARGIN_TOP + 8}" text-anchor="end">{top:.0%}</text>',
        ]
        for position, b in enumerate(bins):
            value = share.get(b, 0.0)
            height = plot_h * value / top
            x = MARGIN_LEFT + position * slot
            lo, hi = lag_bin_bounds(b)
            span = "below 0" if b == NEGATIVE_LAG_BIN else f"{duration(lo)} to {duration(hi)}"
            parts.append(
                f'<rect x="{x:.1f}" y="{MARGIN_TOP + plot_h - height:.1f}" '
                f'width="{max(slot - 1, 1):.1f}" height="{height:.1f}" '
                f'fill="{"#9333ea" if b == NEGATIVE_LAG_BIN else "#2563eb"}">'
                f"<title>{html.escape(span)}: {value:.1%}</title></rect>"
            )
        for offset, label in ticks:
            parts.append(
                f'<text x="{MARGIN_LEFT + offset * slot:.1f}" y="{PANEL_HEIGHT - 10}" '
                f'text-anchor="middle">{html.escape(label)}</text>'
            )
        panels.append(_svg(parts, PANEL_WIDTH, PANEL_HEIGHT))
    return (
        "<h3>Lag distributions</h3><p>Share of each pair's messages per lag, on one "
        f"logarithmic axis ({LAG_BINS_PER_DECADE} bins per power of ten) and one scale for "
        f'all pairs.</p><div class="multiples">{"".join(panels)}</div>'
    )


# ---------------------------------------------------------------- regions

COLOURS = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#4b5563"]
WIDTH, HEIGHT, PAD = 760, 240, 44


REGION_COLUMNS = {
    "records": "copies held",
    "unique_messages": "messages held",
    "expected_replicas": "expected replicas",
    "capture_repeats": "capture repeats",
    "in_region_duplicates": "in-region duplicates",
    "unexpected_duplicates": "unexpected duplicates",
    "missing": "missing messages",
}
"""The per-region table's columns: report.json's ``regions.*`` keys and their headings."""


def _regions(report: dict[str, Any]) -> str:
    regions = report["regions"]
    rows = "".join(
        _row(
            name,
            [_figure(f"regions.{name}.{key}", count(r[key])) for key in REGION_COLUMNS],
        )
        for name, r in regions.items()
    )
    heads = "".join(f"<th>{html.escape(label)}</th>" for label in REGION_COLUMNS.values())
    table = f'<table class="numbers"><tr><th>region</th>{heads}</tr>{rows}</table>'
    if not any(r["unexpected_duplicates"] or r["missing"] for r in regions.values()):
        chart = (
            '<p class="none">No region holds a message twice, holds one the topology does not '
            "send it, or misses one.</p>"
        )
    else:
        chart = _region_bars(regions)
    return f"<h2>Regions</h2>{table}{chart}"


def _region_bars(regions: dict[str, dict[str, int]]) -> str:
    series = (("unexpected_duplicates", "unexpected duplicates"), ("missing", "missing messages"))
    top = max(r[key] for r in regions.values() for key, _ in series)
    slot = (WIDTH - 2 * PAD) / len(regions)
    bar = slot / (len(series) + 1)
    plot_h = HEIGHT - 2 * PAD
    parts = [
        f'<text x="{PAD}" y="20" font-weight="bold">duplicates and missing per region</text>',
        f'<line x1="{PAD}" y1="{HEIGHT - PAD}" x2="{WIDTH - PAD}" y2="{HEIGHT - PAD}" '
        'stroke="#888"/>',
        f'<text x="{PAD - 4}" y="{PAD + 4}" text-anchor="end">{count(top)}</text>',
    ]
    for i, (name, r) in enumerate(regions.items()):
        x0 = PAD + i * slot
        for j, (key, label) in enumerate(series):
            height = plot_h * r[key] / top
            parts.append(
                f'<rect x="{x0 + (j + 0.5) * bar:.1f}" y="{HEIGHT - PAD - height:.1f}" '
                f'width="{bar * 0.9:.1f}" height="{height:.1f}" fill="{COLOURS[j]}">'
                f"<title>{html.escape(name)}: {count(r[key])} {label}</title></rect>"
            )
        parts.append(
            f'<text x="{x0 + slot / 2:.1f}" y="{HEIGHT - PAD + 16}" text-anchor="middle">'
            f"{html.escape(name)}</text>"
        )
    parts.append(_legend([label for _, label in series]))
    return _svg(parts, WIDTH, HEIGHT)


# ---------------------------------------------------------------- listings

LISTING_COLUMNS = {
    "missing": (
        ("message_id", "message id"),
        ("region", "missing in"),
        ("origin", "origin"),
        ("enqueued_time_utc", "first copy enqueued (UTC)"),
    ),
    "loops": (
        ("message_id", "message id"),
        ("origin", "origin"),
        ("copies", "copies"),
        ("region", "first copy in"),
        ("enqueued_time_utc", "first copy enqueued (UTC)"),
    ),
}


def _listings(report: dict[str, Any], listings: dict[str, Listing]) -> str:
    sections = []
    for name, title, total_key in (
        ("missing", "Missing messages", "missing_total"),
        ("loops", "Looping messages", "loops"),
    ):
        listing = listings.get(name)
        if not report[total_key] or listing is None or listing.file is None:
            continue
        relative = f"{name}/{listing.file}"
        columns = LISTING_COLUMNS[name]
        head = "".join(f"<th>{label}</th>" for _, label in columns)
        rows = "".join(
            "<tr>"
            + "".join(f"<td>{html.escape(row.get(c) or '')}</td>" for c, _ in columns)
            + "</tr>"
            for row in listing.rows
        )
        shown = "All" if len(listing.rows) == report[total_key] else "The first"
        link = f'<a href="{html.escape(relative)}">{html.escape(relative)}</a>'
        sections.append(
            f"<h3>{title}</h3><p>{shown} {count(len(listing.rows))} of "
            f"{_figure(total_key, count(report[total_key]))}, earliest first; {link} holds "
            "all of them.</p>"
            f'<table class="ids"><tr>{head}</tr>{rows}</table>'
        )
    return "".join(sections)


# ---------------------------------------------------------------- timeline


def _time_labels(axis: TimeAxis, most: int = 7) -> list[tuple[int, str]]:
    """Bucket positions to label and their UTC times, about ``most`` of them."""
    step = max(1, math.ceil(axis.count / most))
    with_millis = axis.width_us < 1_000_000
    labels = []
    for position in range(0, axis.count + 1, step):
        moment = _utc(axis.start_us + position * axis.width_us)
        text = moment.strftime("%H:%M:%S")
        if with_millis:
            text += f".{moment.microsecond // 1000:03d}"
        if axis.count * axis.width_us >= 86_400_000_000:
            text = moment.strftime("%m-%d %H:%M")
        labels.append((position, text))
    return labels


def _timeline(distributions: Distributions, axis: TimeAxis | None) -> str:
    series = distributions.timeline
    if axis is None or not series:
        return "<h2>Messages over time</h2><p class='none'>No copies.</p>"
    top = max([1, *(v for values in series.values() for v in values)])
    plot_w, plot_h = WIDTH - 2 * PAD, HEIGHT - 2 * PAD
    step = plot_w / axis.count
    parts = [
        f'<line x1="{PAD}" y1="{HEIGHT - PAD}" x2="{WIDTH - PAD}" y2="{HEIGHT - PAD}" '
        'stroke="#888"/>',
        f'<text x="{PAD - 4}" y="{PAD + 4}" text-anchor="end">{count(top)}</text>',
        f'<text x="{PAD - 4}" y="{HEIGHT - PAD}" text-anchor="end">0</text>',
    ]
    for j, (name, values) in enumerate(series.items()):
        points = " ".join(
            f"{PAD + (k + 0.5) * step:.1f},{HEIGHT - PAD - plot_h * v / top:.1f}"
            for k, v in enumerate(values)
        )
        colour = COLOURS[j % len(COLOURS)]
        parts.append(
            f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{points}">'
            f"<title>{html.escape(name)}</title></polyline>"
        )
        if axis.count <= 30:
            parts += [
                f'<circle cx="{PAD + (k + 0.5) * step:.1f}" '
                f'cy="{HEIGHT - PAD - plot_h * v / top:.1f}" r="3" fill="{colour}"/>'
                for k, v in enumerate(values)
            ]
    for position, text in _time_labels(axis):
        x = PAD + position * step
        parts.append(
            f'<line x1="{x:.1f}" y1="{HEIGHT - PAD}" x2="{x:.1f}" y2="{HEIGHT - PAD + 4}" '
            'stroke="#888"/>'
            f'<text x="{x:.1f}" y="{HEIGHT - PAD + 16}" text-anchor="middle">{text}</text>'
        )
    parts.append(_legend(list(series)))
    start = _utc(axis.start_us).strftime("%Y-%m-%d %H:%M:%S UTC")
    return (
        "<h2>Messages over time</h2><p>Messages whose first copy in each region was enqueued "
        f"in each {_width(axis.width_us)}, from {start}.</p>{_svg(parts, WIDTH, HEIGHT)}"
    )


# ---------------------------------------------------------------- page


def _legend(names: list[str], slot: int = 140) -> str:
    """One row of coloured names above a chart's plot, flush right."""
    left = WIDTH - PAD - slot * len(names)
    return "".join(
        f'<rect x="{left + i * slot}" y="12" width="10" height="10" '
        f'fill="{COLOURS[i % len(COLOURS)]}"/><text x="{left + i * slot + 14}" y="21">'
        f"{html.escape(name)}</text>"
        for i, name in enumerate(names)
    )


def _svg(parts: list[str], width: int, height: int) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">'
        f"{''.join(parts)}</svg>"
    )


STYLE = """
body{font-family:system-ui,sans-serif;margin:0 auto;padding:1.5em;max-width:1000px;color:#111}
.banner{padding:1em 1.4em;border-radius:8px;color:#fff;margin-bottom:1.2em}
.banner h1{margin:0 0 .3em;font-size:1.8em}.banner p{margin:0;font-size:1.05em}
.banner.healthy{background:#15803d}.banner.warning{background:#b45309}
.banner.unhealthy{background:#b91c1c}
.cards{display:grid;grid-template-columns:repeat(4,1fr);gap:.6em}
.card{border:1px solid #ddd;border-radius:6px;padding:.5em .8em}
.card.bad{border-color:#b91c1c;background:#fef2f2}
.card .value{font-size:1.5em;font-weight:600}.card .label{font-weight:600}
.card .unit{color:#555;font-size:.85em}
table{border-collapse:collapse;margin:.8em 0}
td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}
td:first-child,th:first-child{text-align:left}
.matrix td,.matrix th{text-align:center;min-width:8em}.matrix .diagonal,.matrix .empty{color:#888}
.ids td{text-align:left;font-family:monospace}
.legend{font-size:.85em;color:#333}
.swatch{display:inline-block;width:.9em;height:.9em;margin:0 .3em 0 .8em;vertical-align:middle}
.multiples{display:flex;flex-wrap:wrap;gap:.5em}.none{color:#15803d}.note{color:#4b5563}
svg{display:block;margin:.5em 0}
"""


def render(report: dict[str, Any], charts: Charts) -> str:
    """The page for ``report`` (report.json's content) and ``charts``."""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Replication audit: {verdict(report)}</title>
<style>{STYLE}</style></head>
<body>
{_banner(report)}
{_key_figures(report)}
{_lag_matrix(report)}
{_lag_distributions(charts.distributions, report["lag_seconds"])}
{_regions(report)}
{_listings(report, charts.listings)}
{_timeline(charts.distributions, charts.axis)}
</body></html>
"""

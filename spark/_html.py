"""``report.html``: one self-contained page (inline SVG, no scripts, no network) with the figures
of report.json and three charts: lag distribution per region pair, duplicates and missing per
region, and messages over time per region."""

from __future__ import annotations

import html
import json
from typing import Any

COLORS = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#4b5563"]
WIDTH, HEIGHT, PAD = 640, 220, 40


def _bars(groups: dict[str, dict[str, int]], series: list[str], title: str) -> str:
    names = list(groups)
    top = max([1, *(v for g in groups.values() for v in g.values())])
    slot = (WIDTH - 2 * PAD) / max(len(names), 1)
    bar = slot / (len(series) + 1)
    parts = [_frame(title, top)]
    for i, name in enumerate(names):
        x0 = PAD + i * slot
        for j, key in enumerate(series):
            value = groups[name].get(key, 0)
            h = (HEIGHT - 2 * PAD) * value / top
            parts.append(
                f'<rect x="{x0 + j * bar:.1f}" y="{HEIGHT - PAD - h:.1f}" width="{bar * 0.9:.1f}" '
                f'height="{h:.1f}" fill="{COLORS[j % len(COLORS)]}"><title>{html.escape(name)} '
                f"{key}: {value}</title></rect>"
            )
        parts.append(
            f'<text x="{x0 + slot / 2:.1f}" y="{HEIGHT - PAD + 14}" text-anchor="middle">'
            f"{html.escape(name)}</text>"
        )
    parts.append(_legend(series))
    return _svg(parts)


def _lines(series: dict[str, list[int]], title: str, start: str | None, width_s: float) -> str:
    top = max([1, *(v for values in series.values() for v in values)])
    parts = [_frame(title, top)]
    for j, (name, values) in enumerate(sorted(series.items())):
        step = (WIDTH - 2 * PAD) / max(len(values) - 1, 1)
        points = " ".join(
            f"{PAD + k * step:.1f},{HEIGHT - PAD - (HEIGHT - 2 * PAD) * v / top:.1f}"
            for k, v in enumerate(values)
        )
        parts.append(
            f'<polyline fill="none" stroke="{COLORS[j % len(COLORS)]}" stroke-width="2" '
            f'points="{points}"><title>{html.escape(name)}</title></polyline>'
        )
    parts.append(
        f'<text x="{PAD}" y="{HEIGHT - 8}">from {html.escape(start or "-")}, '
        f"{width_s:.3g} s per point</text>"
    )
    parts.append(_legend(sorted(series)))
    return _svg(parts)


def _histogram(pair: str, histogram: dict[str, Any]) -> str:
    counts = histogram["counts"]
    top = max([1, *counts])
    slot = (WIDTH - 2 * PAD) / len(counts)
    parts = [_frame(f"lag {pair} (seconds)", top)]
    for k, count in enumerate(counts):
        h = (HEIGHT - 2 * PAD) * count / top
        parts.append(
            f'<rect x="{PAD + k * slot:.1f}" y="{HEIGHT - PAD - h:.1f}" width="{slot * 0.9:.1f}" '
            f'height="{h:.1f}" fill="{COLORS[0]}"><title>{count}</title></rect>'
        )
    parts.append(f'<text x="{PAD}" y="{HEIGHT - PAD + 14}">{histogram["lo"]:.3f}</text>')
    parts.append(
        f'<text x="{WIDTH - PAD}" y="{HEIGHT - PAD + 14}" text-anchor="end">'
        f"{histogram['hi']:.3f}</text>"
    )
    return _svg(parts)


def _frame(title: str, top: int) -> str:
    return (
        f'<text x="{PAD}" y="20" font-weight="bold">{html.escape(title)}</text>'
        f'<line x1="{PAD}" y1="{HEIGHT - PAD}" x2="{WIDTH - PAD}" y2="{HEIGHT - PAD}" '
        'stroke="#999"/>'
        f'<line x1="{PAD}" y1="{PAD}" x2="{PAD}" y2="{HEIGHT - PAD}" stroke="#999"/>'
        f'<text x="{PAD - 4}" y="{PAD + 4}" text-anchor="end">{top}</text>'
    )


def _legend(names: list[str]) -> str:
    return "".join(
        f'<rect x="{WIDTH - 150}" y="{28 + i * 14}" width="10" height="10" '
        f'fill="{COLORS[i % len(COLORS)]}"/><text x="{WIDTH - 135}" y="{37 + i * 14}">'
        f"{html.escape(name)}</text>"
        for i, name in enumerate(names)
    )


def _svg(parts: list[str]) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'font-family="sans-serif" font-size="11">{"".join(parts)}</svg>'
    )


def render(report: dict[str, Any], charts: dict[str, Any]) -> str:
    """The page for ``report`` (report.json's content) and ``charts`` (timeline, histograms)."""
    regions = report["regions"]
    region_bars = {
        name: {"in-region duplicates": r["in_region_duplicates"], "missing": r["missing"]}
        for name, r in regions.items()
    }
    rows = "".join(
        f"<tr><td>{html.escape(k)}</td><td>{html.escape(json.dumps(v))}</td></tr>"
        for k, v in report.items()
        if k not in ("regions", "lag_seconds")
    )
    region_rows = "".join(
        f"<tr><td>{html.escape(name)}</td><td>{r['records']}</td><td>{r['unique_messages']}</td>"
        f"<td>{r['in_region_duplicates']}</td><td>{r['missing']}</td></tr>"
        for name, r in regions.items()
    )
    lag_rows = "".join(
        f"<tr><td>{html.escape(pair)}</td><td>{s['count']}</td><td>{s['p50']}</td>"
        f"<td>{s['p95']}</td><td>{s['p99']}</td><td>{s['max']}</td></tr>"
        for pair, s in report["lag_seconds"].items()
    )
    dist, axis = charts["distributions"], charts["axis"]
    histograms = "".join(
        _histogram(p, {"lo": min(h), "hi": max(h), "counts": list(h.values())})
        for p, h in dist.lag_histograms.items()
    )
    arrivals = _lines(
        dist.timeline,
        "messages by arrival",
        str(axis.start_us) if axis else None,
        axis.width_us / 1e6 if axis else 0,
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Replication duplicate audit</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:1000px}}table{{border-collapse:collapse;
margin:1em 0}}td,th{{border:1px solid #ccc;padding:4px 8px;text-align:right}}
td:first-child,th:first-child{{text-align:left}}svg{{display:block;margin:1em 0}}</style></head>
<body><h1>Replication duplicate audit</h1>
<table><tr><th>figure</th><th>value</th></tr>{rows}</table>
<h2>Regions</h2>
<table><tr><th>region</th><th>records</th><th>unique messages</th><th>in-region duplicates</th>
<th>missing</th></tr>{region_rows}</table>
{_bars(region_bars, ["in-region duplicates", "missing"], "duplicates and missing per region")}
<h2>Messages over time</h2>
{arrivals}
<h2>Replication lag</h2>
<table><tr><th>pair</th><th>count</th><th>p50 s</th><th>p95 s</th><th>p99 s</th><th>max s</th>
</tr>{lag_rows}</table>
{histograms}
</body></html>
"""

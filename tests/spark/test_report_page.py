"""report.html read back: every figure on the page equals report.json, the page lists the
missing and looping ids and names the files that hold them, and headless Chromium renders it
with the verdict on top.

The audits run on the data of ``test_dedup_audit.py`` (whose answers that file pins) and on a
healthy all-active mesh.
"""

from __future__ import annotations

import csv
import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from spark.dedup_audit import main
from tests.spark.test_dedup_audit import REGIONS, record, replica, write_inputs

pytestmark = pytest.mark.spark

HEALTHY_MESH = {
    "weu": [record("h1", 0), replica("h2", 2.25, "neu", "weu"), record("h3", 65)],
    "neu": [replica("h1", 0.5, "weu", "neu"), record("h2", 2), replica("h3", 66.2, "weu", "neu")],
}


BLOCKS = {"p", "div", "td", "th", "tr", "h1", "h2", "h3", "br", "text", "section"}
"""Elements that separate the words around them on the rendered page."""


class Page(HTMLParser):
    """The page's figures (``data-key`` spans), banner class, visible text and links."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.figures: list[tuple[str, str]] = []
        self.banner: str | None = None
        self.links: list[str] = []
        self.text: list[str] = []
        self._key: str | None = None
        self._in_style = False
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag == "span" and attributes.get("data-key"):
            self._key = attributes["data-key"]
        if tag == "section" and "banner" in (attributes.get("class") or ""):
            self.banner = (attributes.get("class") or "").split()[-1]
        if tag == "a" and attributes.get("href"):
            self.links.append(attributes["href"] or "")
        self._in_style = tag in ("style", "title")
        if tag in BLOCKS:
            self.text.append(" ")

    def handle_endtag(self, tag: str) -> None:
        self._key = None if tag == "span" else self._key
        self._in_style = False
        if tag in BLOCKS:
            self.text.append(" ")

    @property
    def words(self) -> str:
        """The visible text, words separated by one space."""
        return " ".join("".join(self.text).split())

    def handle_data(self, data: str) -> None:
        if self._key is not None:
            self.figures.append((self._key, data))
        if not self._in_style:
            self.text.append(data)


UNITS = {"ms": 0.001, "s": 1, "min": 60, "h": 3600}


def number(text: str) -> float:
    """A figure as the page shows it (``1,234``, ``1 min 35.075 s``, ``750 ms``)."""
    text = text.replace("\u2212", "-").replace(",", "")
    sign = -1 if text.startswith("-") else 1
    parts = re.findall(r"([\d.]+)(?:\s*(ms|s|min|h))?", text.lstrip("-"))
    assert parts, text
    if len(parts) == 1 and not parts[0][1]:
        return sign * float(parts[0][0])
    return sign * sum(float(value) * UNITS[unit] for value, unit in parts)


def leaves(value: Any, path: str = "") -> dict[str, Any]:
    """report.json's numbers by dotted path."""
    if isinstance(value, dict):
        found: dict[str, Any] = {}
        for key, inner in value.items():
            found |= leaves(inner, f"{path}.{key}" if path else key)
        return found
    return {path: value}


def audit(tmp_path: Path, regions: dict[str, list[dict[str, Any]]]) -> tuple[dict[str, Any], Path]:
    inputs = write_inputs(tmp_path / "in", regions)
    out = tmp_path / "out"
    assert (
        main([*inputs, "--format", "json", "--watermark", "30 seconds", "--output", str(out)]) == 0
    )
    return json.loads((out / "report.json").read_text()), out


@pytest.fixture(scope="module")
def unhealthy(spark: Any, tmp_path_factory: Any) -> tuple[dict[str, Any], Path]:
    return audit(tmp_path_factory.mktemp("unhealthy"), REGIONS)


@pytest.fixture(scope="module")
def healthy(spark: Any, tmp_path_factory: Any) -> tuple[dict[str, Any], Path]:
    return audit(tmp_path_factory.mktemp("healthy"), HEALTHY_MESH)


@pytest.mark.parametrize("which", ["unhealthy", "healthy"])
def test_every_figure_on_the_page_equals_report_json(which: str, request: Any) -> None:
    report, out = request.getfixturevalue(which)
    page = Page((out / "report.html").read_text())
    expected = leaves(report)
    assert page.figures
    for key, text in page.figures:
        assert key in expected, f"{key} is on the page but not in report.json"
        if isinstance(expected[key], str):  # a time of the audited window
            assert text == expected[key], (key, text)
        else:
            assert number(text) == pytest.approx(expected[key], abs=5e-4), (key, text)
    assert {key for key, _ in page.figures} == set(expected)


def test_an_unhealthy_mesh_says_so_and_lists_what_is_missing_and_looping(
    unhealthy: tuple[dict[str, Any], Path],
) -> None:
    _, out = unhealthy
    source = (out / "report.html").read_text()
    page = Page(source)
    text = page.words
    assert page.banner == "unhealthy"
    assert "Not healthy" in text
    assert "Missing from a region that should hold them: 1 (neu 1). Looping: 1." in text
    # The listings: the rows on the page and the files they link to, which hold all of them.
    assert sorted(page.links) == [
        f"loops/{next((out / 'loops').glob('*.csv')).name}",
        f"missing/{next((out / 'missing').glob('*.csv')).name}",
    ]
    for link in page.links:
        rows = list(csv.DictReader((out / link).open()))
        if link.startswith("missing/"):
            assert [(r["message_id"], r["region"], r["origin"]) for r in rows] == [
                ("m4", "neu", "weu")
            ]
        else:
            assert [(r["message_id"], r["origin"], r["copies"]) for r in rows] == [
                ("m5", "weu", "4")
            ]
    assert "m4 neu weu 2024-05-01T12:00:30.000Z" in text
    assert "m5 weu 4 weu 2024-05-01T12:00:40.000Z" in text
    # In-region duplicates and one missing message: the per-region chart is drawn.
    assert "duplicates and missing per region" in text
    # Messages over time on a UTC axis: the copies span 11:59:49 to 12:02:30 in 2 s buckets.
    assert "in each 2 s, from 2024-05-01 11:59:48 UTC" in text
    assert re.search(r"11:59:48 .*12:00:\d\d .*12:01:\d\d", text)
    assert "http" not in source.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "<script" not in source


def test_a_healthy_mesh_has_a_green_banner_and_one_line_instead_of_empty_charts(
    healthy: tuple[dict[str, Any], Path],
) -> None:
    report, out = healthy
    page = Page((out / "report.html").read_text())
    text = page.words
    assert (report["missing_total"], report["loops"], report["late_records"]) == (0, 0, 0)
    assert page.banner == "healthy"
    assert text.startswith("Healthy All 3 messages reached every region they should")
    assert (
        "No region holds a message twice, holds one the topology does not send it, or misses one."
        in text
    )
    # Replicas are copies, not duplicates: 3 messages in 2 regions are 3 expected replicas.
    assert "3 expected replicas copies the topology sends to other regions" in text
    assert "0 unexpected duplicates" in text
    assert "duplicates and missing per region" not in text
    assert page.links == []
    assert not (out / "missing").exists()
    assert not (out / "loops").exists()
    # The lag matrix: p50 and p95 per pair in milliseconds or seconds.
    assert "from weu origin p50 850 ms p95 1.165 s from neu p50 250 ms p95 250 ms origin" in text
    assert "weu → neu 2 messages" in text


BANNER_COLOURS = {"healthy": (0x15, 0x80, 0x3D), "unhealthy": (0xB9, 0x1C, 0x1C)}


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip(
            "Debian's chromium is not installed: ./dev.sh test installs it with apt-get when "
            "it runs as root; elsewhere run `sudo apt-get install chromium`"
        )
    return found


@pytest.mark.parametrize("which", ["unhealthy", "healthy"])
def test_chromium_renders_the_page_with_the_verdict_on_top(
    which: str, request: Any, tmp_path: Path
) -> None:
    """Headless Chromium takes a screenshot; the banner's colour fills the top of the page and
    the rest is not blank."""
    from PIL import Image

    browser = chromium()
    _, out = request.getfixturevalue(which)
    shot = tmp_path / "page.png"
    subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--window-size=1100,1600", f"--screenshot={shot}", (out / "report.html").as_uri()],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    image = Image.open(shot).convert("RGB")
    width, height = image.size
    assert (width, height) == (1100, 1600)
    banner = image.crop((width // 2 - 300, 30, width // 2 + 300, 90))
    colours = banner.getcolors(maxcolors=100_000) or []
    most, colour = max(colours)
    assert colour == BANNER_COLOURS[which]
    assert most > 0.5 * banner.width * banner.height
    # Below the banner: figures, tables and charts, i.e. many pixels that are not background.
    body = image.crop((0, 150, width, height))
    background = max(body.getcolors(maxcolors=1_000_000) or [])[1]
    drawn = sum(n for n, c in body.getcolors(maxcolors=1_000_000) or [] if c != background)
    assert drawn > 0.02 * body.width * body.height
    assert len(body.getcolors(maxcolors=1_000_000) or []) > 50

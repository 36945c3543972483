"""The site builds with ``mkdocs build --strict`` (the ``site`` fixture fails otherwise), every
generated part of the reference was filled in, and headless Chromium renders the home page and
the topology reference with text, tables and the theme's header, not a blank page."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

PAGES = {
    "home": "index.html",
    "topology reference": "reference/topology/index.html",
}


def test_every_generated_part_is_filled_in(site: Path) -> None:
    for page in ("topology", "cli", "settings", "metrics", "exit-codes"):
        html = (site / "reference" / page / "index.html").read_text(encoding="utf-8")
        assert "<!-- generated:" not in html, page
        assert "<table>" in html, f"{page}: no generated table"


def test_the_schema_and_the_api_are_published(site: Path) -> None:
    assert (site / "reference" / "topology.schema.json").is_file()
    api = (site / "reference" / "api" / "index.html").read_text(encoding="utf-8")
    assert "build_app" in api
    assert "FailoverPublisher" in api
    assert "load_topology" in api


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip(
            "Debian's chromium is not installed: ./dev.sh test installs it with apt-get when "
            "it runs as root; elsewhere run `sudo apt-get install chromium`"
        )
    return found


@pytest.mark.parametrize("page", sorted(PAGES), ids=str)
def test_chromium_renders_the_page_not_blank(site: Path, page: str, tmp_path: Path) -> None:
    from PIL import Image

    shot = tmp_path / "page.png"
    subprocess.run(
        [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--window-size=1200,1400", f"--screenshot={shot}", (site / PAGES[page]).as_uri()],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    image = Image.open(shot).convert("RGB")
    width, height = image.size
    assert (width, height) == (1200, 1400)
    # The theme's header: a band of one colour that is not the page's white.
    header = image.crop((0, 0, width, 40))
    count, colour = max(header.getcolors(maxcolors=100_000) or [])
    assert colour != (255, 255, 255)
    assert count > 0.6 * header.width * header.height
    # Below it: text and tables, many pixels that are not background, in many shades.
    body = image.crop((0, 60, width, height))
    colours = body.getcolors(maxcolors=1_000_000) or []
    background = max(colours)[1]
    drawn = sum(n for n, c in colours if c != background)
    assert drawn > 0.02 * body.width * body.height
    assert len(colours) > 50

"""The code blocks of the documentation's pages, as tests run them (``test_code_blocks.py``).

A page's ``python`` and ``bash`` blocks run, in page order; every other language (``json``,
``text``, ``kusto``) is there to be read. An HTML comment on the line right before a block's
opening fence or right after its closing fence changes how it runs:

- ``<!-- skip: REASON -->``: not run, and the test says why (a block that needs Azure, starts
  a server that runs until Ctrl-C, or installs packages);
- ``<!-- test: emulator -->``: run with the local emulator serving the tutorial's topology and
  its tasks running, their connection settings in the environment;
- ``<!-- test: app -->``: a bash block run in the page's shell folder, which starts in an app
  made by ``replication init`` (not the checkout) and moves where the page's ``app`` blocks
  ``cd``, as a reader's one terminal does. ``<!-- test: app emulator -->`` asks for both.

A ``text`` block right after a block that runs is its expected output; a line ``...`` stands
for any number of lines.

Read with markdown-it-py (CommonMark, as the site's Markdown renders fences) rather than with
pytest-markdown-docs or mktestdocs: those collect Python blocks only, and collect ``.md`` files
as test items outside ``tests/``, which the tier guard of ``tests/conftest.py`` refuses.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
RUNNABLE = ("python", "bash")
MARKER = re.compile(r"^<!-- (skip|test): (.+?) -->$")
ENVIRONMENTS = frozenset({"emulator", "app"})


@dataclasses.dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    page: str
    """The page, relative to ``docs/``."""
    line: int
    """The opening fence's line, counted from 1."""
    language: str
    code: str
    skip: str | None = None
    """Why the block does not run."""
    needs: frozenset[str] = frozenset()
    """What it runs against or in (:data:`ENVIRONMENTS`)."""
    expected: str | None = None
    """The output it prints, from the ``text`` block that follows it."""

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}:{self.language}"


def pages() -> list[Path]:
    """Every Markdown page of the site (the package description and hooks are not pages)."""
    return sorted(
        path
        for path in DOCS.rglob("*.md")
        if path.name != "pypi-readme.md" and "hooks" not in path.parts
    )


def blocks(path: Path) -> list[Block]:
    """The page's fenced blocks with their markers and expected output.

    Raises:
        ValueError: a marker that is not next to a runnable block, or that is malformed.
    """
    tokens = [
        token
        for token in MarkdownIt("commonmark").parse(path.read_text(encoding="utf-8"))
        if token.type in ("fence", "html_block") and token.map is not None
    ]
    page = path.relative_to(DOCS).as_posix()
    found: list[Block] = []
    used: set[int] = set()
    for index, token in enumerate(tokens):
        if token.type != "fence":
            continue
        start, end = token.map  # type: ignore[misc]
        marker: tuple[str, str] | None = None
        for other_index, other in enumerate(tokens):
            if other.type != "html_block" or other.map is None:
                continue
            if other.map[1] == start or other.map[0] == end:
                match = MARKER.match(other.content.strip())
                if match and token.info.split()[0] in RUNNABLE:
                    marker = (match.group(1), match.group(2))
                    used.add(other_index)
        following = tokens[index + 1] if index + 1 < len(tokens) else None
        if following is not None and following.type == "html_block" and index + 1 in used:
            following = tokens[index + 2] if index + 2 < len(tokens) else None
        expected = None
        if (
            following is not None
            and following.type == "fence"
            and following.info.strip() == "text"
            and following.map is not None
            and _only_blank_between(path, end, following.map[0])
        ):
            expected = following.content
        language = token.info.split()[0] if token.info.strip() else ""
        kind, value = marker if marker else (None, None)
        needs = frozenset(value.split()) if kind == "test" and value else frozenset()
        if needs - ENVIRONMENTS:
            raise ValueError(f"{page}:{start + 1}: unknown test environment {value!r}")
        found.append(
            Block(
                page=page,
                line=start + 1,
                language=language,
                code=token.content,
                skip=value if kind == "skip" else None,
                needs=needs,
                expected=expected,
            )
        )
    for index, token in enumerate(tokens):
        if token.type == "html_block" and MARKER.match(token.content.strip()) and index not in used:
            line = token.map[0] + 1 if token.map else 0
            raise ValueError(f"{page}:{line}: a marker that is next to no python or bash block")
    return found


def _only_blank_between(path: Path, first: int, last: int) -> bool:
    lines = path.read_text(encoding="utf-8").splitlines()[first:last]
    return all(not line.strip() or MARKER.match(line.strip()) for line in lines)


def matches(output: str, expected: str) -> bool:
    """Whether ``output`` is ``expected``, a line ``...`` standing for any lines."""
    pattern = "".join(
        r"(?:.*\n)*?" if line.strip() == "..." else re.escape(line) + r"\n"
        for line in expected.rstrip("\n").split("\n")
    )
    return re.fullmatch(pattern, output.rstrip("\n") + "\n") is not None


__all__ = ["DOCS", "ROOT", "RUNNABLE", "Block", "blocks", "matches", "pages"]

"""The Function app deployed as the repository's files still indexes without the wheel.

``func azure functionapp publish`` (and the Flex Consumption package) uploads the app directory
minus what ``.funcignore`` lists; the Python worker then imports ``function_app.py`` with that
directory first on ``sys.path``. This copies exactly the tracked files ``.funcignore`` keeps
(its patterns read as Core Tools reads them: a name or glob matching a path or any of its
folders) into an empty folder and builds the app there in a fresh interpreter, with a topology
whose tasks load every pattern, so that the pattern modules must come from the deployed
``patterns/`` folder and the library from the deployed ``replication/`` folder.
"""

from __future__ import annotations

import fnmatch
import json
import shutil
import subprocess
import sys
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parents[2]


def _ignored(path: str, patterns: list[str]) -> bool:
    parts = PurePosixPath(path).parts
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    return any(
        fnmatch.fnmatch(candidate, pattern)
        or fnmatch.fnmatch(PurePosixPath(candidate).name, pattern)
        for pattern in patterns
        for candidate in prefixes
    )


def deployed_files() -> list[str]:
    patterns = [
        line.strip()
        for line in (ROOT / ".funcignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    return [path for path in tracked if not _ignored(path, patterns)]


def test_the_deployed_files_hold_the_library_and_the_patterns_and_nothing_to_build() -> None:
    files = deployed_files()
    assert "function_app.py" in files
    assert "patterns/validation.py" in files
    assert "replication/planning.py" in files
    assert not [f for f in files if f.split("/")[0] in ("tests", "emulator", "spark", "examples")]
    # Nothing that would make a remote build treat the app as a package to install.
    assert "setup.py" not in files
    assert "pyproject.toml" not in files


def test_the_deployed_files_index_every_pattern(tmp_path: Path) -> None:
    app = tmp_path / "app"
    for path in deployed_files():
        (app / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / path, app / path)
    example = json.loads((ROOT / "examples" / "active-passive-and-stream.json").read_text())
    (app / "topology.json").write_text(json.dumps(example))
    script = (
        "import function_app\nfrom replication.layout import PATTERNS\n"
        "from replication.planning import PATTERN_NAMES, load_pattern\n"
        "assert [load_pattern(n).name for n in PATTERN_NAMES] == list(PATTERN_NAMES)\n"
        "print(PATTERNS.module(), len(function_app.app.get_functions()))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=app,
        capture_output=True,
        text=True,
        timeout=120,
        env={
            "PATH": "/usr/bin:/bin",
            "REPLICATION_TOPOLOGY": "topology.json",
            "PYTHONPATH": str(app),
        },
    )
    assert result.returncode == 0, result.stderr[-2000:]
    package, functions = result.stdout.split()
    assert package == "patterns"
    assert int(functions) >= 1

"""Fixtures of the packaging tier: the distribution built from the tracked files, and clean
virtual environments outside the repository that hold it and only what it declares.

- :func:`dist`: the sdist and the wheel, built with ``python -m build`` from a copy of the files
  git tracks (so nothing untracked can leak in), the wheel from the sdist, as a package index
  or a user building from the sdist would;
- :func:`environments`: two virtual environments created side by side, one with the wheel
  alone (``bare``) and one with ``[all]`` (``full``). Installs are constrained to the versions
  ``requirements.txt`` and ``requirements-dev.txt`` pin (within the ranges the wheel declares),
  which is what the emulator is tested with and what pip's cache already holds, and skip
  byte-compiling (``--no-compile``: a third of the time, nothing the tests need).

Every command of these tests runs with an environment stripped of ``PYTHONPATH`` and
``VIRTUAL_ENV``, in a working directory outside the repository, so the library can only come
from the wheel.

The tier runs on several pytest-xdist processes (its tests mostly wait on the processes they
start); the distribution and the environments are made once, by whichever process asks first,
under a file lock in the folder all of them share (:func:`_once`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INSTALL_TIMEOUT = 900.0
SETUP_TIMEOUT = 3 * INSTALL_TIMEOUT
"""A test's limit, its share of the build and the installs included."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.is_relative_to(Path(__file__).parent):
            item.add_marker(pytest.mark.package)
            # pytest-timeout counts fixture setup: the first test of each process waits for the
            # build and the two installs (minutes on a loaded machine), not only its own work.
            item.add_marker(pytest.mark.timeout(SETUP_TIMEOUT))


def clean_environ(
    extra: Mapping[str, str] | None = None, *, venv: Path | None = None
) -> dict[str, str]:
    """The current environment without what would make Python find the checkout or the
    development environment; with ``venv``'s ``bin`` first on ``PATH``."""
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    path = [p for p in environ.get("PATH", "").split(os.pathsep) if ".venv" not in p]
    if venv is not None:
        path.insert(0, str(venv / "bin"))
    environ["PATH"] = os.pathsep.join(path)
    return {**environ, **(extra or {})}


def run(
    command: Sequence[str | os.PathLike[str]],
    *,
    cwd: Path,
    venv: Path | None = None,
    environ: Mapping[str, str] | None = None,
    timeout: float = 300.0,
) -> subprocess.CompletedProcess[str]:
    """``command`` in ``cwd`` (outside the repository), with :func:`clean_environ`."""
    assert not cwd.resolve().is_relative_to(ROOT), cwd
    return subprocess.run(
        [os.fspath(part) for part in command],
        cwd=cwd,
        env=clean_environ(environ, venv=venv),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@dataclasses.dataclass(frozen=True)
class Dist:
    wheel: Path
    sdist: Path


@dataclasses.dataclass(frozen=True)
class Environments:
    """``bare``: the wheel alone; ``full``: the wheel with ``[all]`` (each a venv's folder)."""

    bare: Path
    full: Path


def constraints(folder: Path) -> Path:
    """The exact pins of ``requirements.txt`` and ``requirements-dev.txt`` as a constraints file."""
    lines = [
        line.strip()
        for name in ("requirements.txt", "requirements-dev.txt")
        for line in (ROOT / name).read_text().splitlines()
        if line.strip() and not line.lstrip().startswith(("#", "-"))
    ]
    path = folder / "constraints.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


@contextlib.contextmanager
def _once(tmp_path_factory: pytest.TempPathFactory, name: str) -> Iterator[tuple[Path, bool]]:
    """A folder ``name`` shared by every xdist process of this run, and whether it still has
    to be made; the caller makes it while holding the lock, the others wait for it."""
    shared = tmp_path_factory.getbasetemp().parent
    folder = shared / name
    with (shared / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = folder / ".done"
        yield folder, not done.exists()
        folder.mkdir(exist_ok=True)
        done.touch()


@pytest.fixture(scope="session")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Dist:
    """The sdist and wheel, built from a copy of the tracked files."""
    with _once(tmp_path_factory, "dist") as (out, needed):
        if needed:
            _build(out, tmp_path_factory.mktemp("source"))
        (wheel,) = out.glob("*.whl")
        (sdist,) = out.glob("*.tar.gz")
    return Dist(wheel, sdist)


def _build(out: Path, source: Path) -> None:
    tracked = (
        subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
        .stdout.decode()
        .split("\0")
    )
    for name in filter(None, tracked):
        origin = ROOT / name
        if origin.is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(origin, source / name)
    out.mkdir(exist_ok=True)
    built = run(
        [sys.executable, "-m", "build", "--outdir", out, source],
        cwd=out,
        timeout=INSTALL_TIMEOUT,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]


def _install(venv: Path, requirement: str, constraint: Path) -> subprocess.Popen[str]:
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    return subprocess.Popen(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-compile",
         "--disable-pip-version-check", "-c", str(constraint), requirement],
        cwd=venv,
        env=clean_environ(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )  # fmt: skip


@pytest.fixture(scope="session")
def environments(dist: Dist, tmp_path_factory: pytest.TempPathFactory) -> Environments:
    """The two environments, installed side by side (pip mostly waits on the disk)."""
    with _once(tmp_path_factory, "environments") as (folder, needed):
        chosen = Environments(folder / "bare", folder / "full")
        if needed:
            folder.mkdir(exist_ok=True)
            constraint = constraints(folder)
            installs = [
                _install(chosen.bare, str(dist.wheel), constraint),
                _install(chosen.full, f"{dist.wheel}[all]", constraint),
            ]
            for install in installs:
                output, _ = install.communicate(timeout=INSTALL_TIMEOUT)
                assert install.returncode == 0, output[-3000:]
    return chosen


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A working directory outside the repository."""
    assert not tmp_path.resolve().is_relative_to(ROOT)
    return tmp_path

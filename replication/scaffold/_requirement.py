"""How a new app's ``requirements.txt`` names this library, so that both a local
``pip install -r requirements.txt`` and the Functions remote build resolve it.

The remote build installs ``requirements.txt`` from the package index, so the requirement must
name something the build can reach. Where this library came from decides what that is:

1. ``--wheel FILE`` given: the wheel is copied into the app's ``wheels/`` folder.
2. Installed from a wheel file (pip records its URL in the distribution's ``direct_url.json``,
   PEP 610): that wheel is copied the same way. When the file is gone, ``init`` stops and asks
   for ``--wheel``: naming the package index instead would fail where the index does not hold
   this version.
3. Installed from a local folder (``pip install .`` in a checkout, editable or not: PEP 610's
   ``dir_info``) that still holds the project: a wheel is built from that folder into
   ``wheels/`` (``pip wheel --no-deps``). Naming the folder would resolve on this machine only.
4. Running from a checkout of the repository: a wheel is built from it the same way.
5. Installed from a version control URL: the requirement is that URL at the installed commit.
6. Otherwise (installed from an index): ``azure-messaging-replication[EXTRAS]==VERSION``.

For 1-4 the file starts with ``--find-links wheels``: pip reads a ``--find-links`` folder
relative to the requirements file, locally and in the remote build alike, and still takes the
dependencies from the index.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlparse

from replication import __version__
from replication.exceptions import ConfigurationError
from replication.extras import DISTRIBUTION
from replication.layout import CHECKOUT_ROOT, IN_CHECKOUT

WHEELS = "wheels"
"""The app's folder for vendored wheels (deployed with the app: not in ``.funcignore``)."""


@dataclasses.dataclass(frozen=True)
class LibraryRequirement:
    """The lines naming this library in ``requirements.txt``, and where they came from."""

    lines: tuple[str, ...]
    origin: str
    """One sentence for the person who ran ``init`` (and the file's comment): what was done to
    make it resolvable."""


def library_requirement(
    app: Path, extras: tuple[str, ...], wheel: Path | None
) -> LibraryRequirement:
    """The requirement for ``app`` (see the module docstring); copies or builds a wheel into
    ``app/wheels`` where that is the way.

    Raises:
        ConfigurationError: ``wheel`` is not a wheel of this distribution, or building one from
            the project folder or the checkout failed.
    """
    named = f"{DISTRIBUTION}[{','.join(extras)}]" if extras else DISTRIBUTION
    if wheel is not None:
        return _vendored(app, named, _checked_wheel(wheel), "the wheel given by --wheel")
    direct = _direct_url()
    installed_from = _local_wheel(direct)
    if installed_from is not None:
        return _vendored(app, named, installed_from, f"{installed_from.name}, the wheel pip "
                         "installed this library from")  # fmt: skip
    folder = _local_folder(direct)
    if folder is not None:
        return _vendored(app, named, _build_wheel(app, folder), f"a wheel built from {folder}, "
                         "the folder pip installed this library from")  # fmt: skip
    if IN_CHECKOUT:
        built = _build_wheel(app, CHECKOUT_ROOT)
        return _vendored(app, named, built, f"a wheel built from the checkout {CHECKOUT_ROOT}")
    vcs = _vcs_url(direct)
    if vcs is not None:
        return LibraryRequirement((f"{named} @ {vcs}",), f"The library from {vcs}, as pip "
                                  "installed it")  # fmt: skip
    return LibraryRequirement(
        (f"{named}=={__version__}",), "The library from the package index, as pip installed it"
    )


def _vendored(app: Path, named: str, wheel: Path, what: str) -> LibraryRequirement:
    folder = app / WHEELS
    folder.mkdir(parents=True, exist_ok=True)
    if wheel.parent.resolve() != folder.resolve():
        shutil.copy2(wheel, folder / wheel.name)
    return LibraryRequirement(
        (f"--find-links {WHEELS}", f"{named}=={__version__}"), f"The folder {WHEELS}/ holds {what}"
    )


def _checked_wheel(wheel: Path) -> Path:
    prefix = DISTRIBUTION.replace("-", "_") + "-"
    if not wheel.is_file() or wheel.suffix != ".whl" or not wheel.name.startswith(prefix):
        raise ConfigurationError(
            f"{wheel}: not a wheel of {DISTRIBUTION} ({prefix}VERSION-...-.whl)", source="--wheel"
        )
    if not wheel.name.startswith(f"{prefix}{__version__}-"):
        raise ConfigurationError(
            f"{wheel}: is not version {__version__}, the version of this library",
            source="--wheel",
        )
    return wheel


def _direct_url() -> dict[str, object] | None:
    try:
        text = metadata.distribution(DISTRIBUTION).read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None
    if not text:
        return None
    document = json.loads(text)
    return document if isinstance(document, dict) else None


def _local_wheel(direct: Mapping[str, object] | None) -> Path | None:
    """The wheel file pip installed this library from, or None when it came from elsewhere.

    Raises:
        ConfigurationError: it came from a wheel file that is no longer there.
    """
    url = str(direct.get("url", "")) if direct else ""
    parsed = urlparse(url)
    if parsed.scheme != "file" or not parsed.path.endswith(".whl"):
        return None
    path = Path(unquote(parsed.path))
    if not path.is_file():
        raise ConfigurationError(
            f"this library was installed from {path}, which is no longer there: give a wheel of "
            f"version {__version__} with --wheel FILE, which requirements.txt then names "
            "(the package index may not hold it)"
        )
    return path


def _local_folder(direct: Mapping[str, object] | None) -> Path | None:
    """The project folder pip installed this library from, while it still holds the project."""
    if not direct or not isinstance(direct.get("dir_info"), dict):
        return None
    parsed = urlparse(str(direct.get("url", "")))
    if parsed.scheme != "file":
        return None
    folder = Path(unquote(parsed.path))
    return folder if (folder / "pyproject.toml").is_file() else None


def _vcs_url(direct: Mapping[str, object] | None) -> str | None:
    if not direct or not isinstance(direct.get("vcs_info"), dict):
        return None
    info = direct["vcs_info"]
    assert isinstance(info, dict)
    commit = info.get("commit_id")
    return f"{info.get('vcs', 'git')}+{direct['url']}" + (f"@{commit}" if commit else "")


def _build_wheel(app: Path, project: Path) -> Path:
    folder = app / WHEELS
    folder.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(folder),
         str(project)],
        capture_output=True,
        text=True,
        check=False,
    )  # fmt: skip
    built = sorted(folder.glob(f"{DISTRIBUTION.replace('-', '_')}-{__version__}-*.whl"))
    if result.returncode != 0 or not built:
        tail = result.stderr.strip().splitlines()[-1:] or ["no wheel was written"]
        raise ConfigurationError(f"building a wheel from {project} failed: {tail[0]}")
    return built[-1]


__all__ = ["WHEELS", "LibraryRequirement", "library_requirement"]

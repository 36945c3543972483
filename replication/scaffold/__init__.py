"""``replication init``: a new Function app of your own, ready for ``func start`` and ``azd up``.

:func:`create_app` writes into an empty (or new) folder:

- ``topology.json``, a copy of one of the library's examples (with any module of the examples
  that its tasks name as ``module:function``), and ``topology.schema.json``, its JSON Schema,
  which the copy names with ``"$schema"`` (editors complete and check it);
- ``function_app.py`` (``build_app(transforms=transforms)``) and ``app_transforms.py``, a
  registry with one example transform;
- ``requirements.txt`` naming this library with the ``monitor`` extra (the Bicep always sets
  Application Insights, whose exporter that extra installs), resolvable by pip and by the
  Functions remote build (:mod:`._requirement`);
- ``host.json`` (the repository's own), ``.funcignore``, ``.gitignore``, ``local.settings.json``
  (``func start`` against the local emulator and Azurite);
- ``infra/`` (the Bicep, its workbook and the azd hook script, shipped in the wheel as
  ``replication.infra``) and ``azure.yaml``, whose preprovision hook renders the Bicep
  parameters with the library installed from ``requirements.txt``;
- ``README.md``: how to check, run and deploy it.

Nothing is overwritten: a folder that holds anything is refused.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from importlib import resources
from pathlib import Path

from replication import __version__
from replication.exceptions import ConfigurationError
from replication.extras import DISTRIBUTION
from replication.layout import EXAMPLES, INFRA
from replication.topology import topology_schema_text

from ._requirement import WHEELS, LibraryRequirement, library_requirement

DEFAULT_EXAMPLE = "two-region-all-active"
APP_EXTRAS = ("monitor",)
"""The extras every app installs: the Bicep always configures Application Insights."""
_INFRA_FILES = ("main.bicep", "workbook.json", "README.md", "modules/*.bicep", "scripts/*.sh")
"""What ``infra/`` of an app holds: the templates, their scripts and the README they cite."""
_TEMPLATES = {
    "function_app.py.in": "function_app.py",
    "app_transforms.py.in": "app_transforms.py",
    "host.json": "host.json",
    "funcignore.in": ".funcignore",
    "gitignore.in": ".gitignore",
    "azure.yaml.in": "azure.yaml",
    "README.md.in": "README.md",
}
SCHEMA_FILE = "topology.schema.json"
_SCHEMA_REFERENCE = re.compile(r'"\$schema"\s*:\s*"[^"]*"')
_MODULE_REFERENCE = re.compile(r'"(?:function|transform|bodyModel)"\s*:\s*"([A-Za-z_]\w*):')


@dataclasses.dataclass(frozen=True)
class CreatedApp:
    """What :func:`create_app` wrote."""

    folder: Path
    example: str
    files: tuple[str, ...]
    requirement: LibraryRequirement


def example_names() -> list[str]:
    """The examples ``--example`` takes: the topology files of the library's examples."""
    return sorted(path.stem for path in EXAMPLES.folder().glob("*.json"))


def create_app(
    folder: Path, *, example: str = DEFAULT_EXAMPLE, wheel: Path | None = None
) -> CreatedApp:
    """Write a new app into ``folder`` (see the module docstring); on any error, nothing of it
    is left there.

    Raises:
        ConfigurationError: ``folder`` is a file or not empty, or ``example`` is unknown (with
            the known ones), or ``wheel`` is not this library's wheel, or the library came from
            a wheel file that is gone.
    """
    names = example_names()
    if example not in names:
        raise ConfigurationError(
            f"no example named '{example}'; choose one of {', '.join(names)}", source="--example"
        )
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise ConfigurationError(f"{folder} exists and is not an empty folder: nothing written")
    existed = folder.exists()
    folder.mkdir(parents=True, exist_ok=True)
    try:
        return _write_app(folder, example, wheel)
    except BaseException:
        # Whatever stopped it (a wheel that is not this library's, a build that failed), the
        # folder is left as it was: a second ``init`` into it must not find it "not empty".
        if not existed:
            shutil.rmtree(folder)
            raise
        for child in folder.iterdir():
            if child.is_dir():
                shutil.rmtree(child)
            else:
                child.unlink()
        raise


def _write_app(folder: Path, example: str, wheel: Path | None) -> CreatedApp:
    """Write every file of the app into the empty ``folder``."""
    written: list[str] = []

    def write(name: str, text: str) -> None:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
        written.append(name)

    source = EXAMPLES.folder() / f"{example}.json"
    # The example names the schema in the repository's docs; the app gets its own copy.
    topology = _SCHEMA_REFERENCE.sub(
        f'"$schema": "{SCHEMA_FILE}"', source.read_text(encoding="utf-8"), count=1
    )
    write("topology.json", topology)
    write(SCHEMA_FILE, topology_schema_text())
    for module in sorted(set(_MODULE_REFERENCE.findall(topology))):
        code = EXAMPLES.folder() / f"{module}.py"
        if code.is_file():
            write(f"{module}.py", code.read_text(encoding="utf-8"))
    requirement = library_requirement(folder, APP_EXTRAS, wheel)
    written.extend(f"{WHEELS}/{path.name}" for path in sorted((folder / WHEELS).glob("*.whl")))
    write(
        "requirements.txt",
        "# The replication library; the `monitor` extra exports telemetry to Application\n"
        f"# Insights. {requirement.origin}.\n" + "\n".join(requirement.lines) + "\n",
    )
    values = {
        "FUNCTIONS_WORKER_RUNTIME": "python",
        "AzureWebJobsStorage": "UseDevelopmentStorage=true",
        "REPLICATION_TOPOLOGY": "topology.json",
    }
    write(
        "local.settings.json",
        json.dumps({"IsEncrypted": False, "Values": values}, indent=2) + "\n",
    )
    vendored = (folder / WHEELS).is_dir()
    wheel_note = f" (vendored in `{WHEELS}/`)" if vendored else ""
    # A vendored library is not on the package index: pip finds it beside the app.
    local = f"'{DISTRIBUTION}[local]=={__version__}'"
    local_install = f"--find-links {WHEELS} {local}" if vendored else local
    fields = {"name": folder.resolve().name, "version": __version__, "example": example,
              "wheel_note": wheel_note, "local_install": local_install}  # fmt: skip
    templates = resources.files(__package__) / "template"
    for template, name in _TEMPLATES.items():
        text = (templates / template).read_text(encoding="utf-8")
        for field, value in fields.items():  # not str.format: the Python files hold braces
            text = text.replace(f"{{{field}}}", value)
        write(name, text)
    infra = INFRA.folder()
    for pattern in _INFRA_FILES:
        for path in sorted(infra.glob(pattern)):
            relative = path.relative_to(infra).as_posix()
            target = folder / "infra" / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)  # keeps the scripts executable
            written.append(f"infra/{relative}")
    return CreatedApp(folder, example, tuple(written), requirement)


__all__ = ["APP_EXTRAS", "DEFAULT_EXAMPLE", "CreatedApp", "create_app", "example_names"]

"""The optional parts of the distribution: what each extra installs, and the one-line error
of a feature that needs one that is missing.

``pip install azure-messaging-replication`` installs what the Function app and the operator
commands (``validate``, ``plan``, ``render``, ``run``, ``status``, ``redrive``, ``failover``)
need. Four extras add the rest (``pyproject.toml`` declares the same table;
``tests/package`` checks that the two agree):

===========  =========================================  ===========================================
extra        installs                                   needed by
===========  =========================================  ===========================================
``monitor``  azure-monitor-opentelemetry, the           telemetry export: Application Insights in
             OpenTelemetry SDK and its OTLP exporter    the Function app, OTLP or the console for
                                                        ``run``
``lint``     pycep-parser                               ``lint-rules --bicep-root``
``local``    python-qpid-proton, json5                  ``emulator``, ``demo``, ``drill``
``audit``    pyspark (with its Spark Connect client),   ``audit``, the demo's Spark audit
             fastavro, pandas, pyarrow
``all``      all of the above
===========  =========================================  ===========================================

Outside Python: Java 17+ for PySpark (:func:`require_java` checks it), and Azurite (``npm
install -g azurite``, Node.js 18+) for ``drill`` and the demo's failover scenario
(:func:`replication.drill.azurite_command` finds it).

A command that needs an extra checks for it before it imports anything of it
(:func:`require`), so a missing one ends the command with one line naming the extra and exit
code 2, never an import traceback.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import re
import shutil
from pathlib import Path

from replication.exceptions import MissingExtraError, MissingProgramError

DISTRIBUTION = "azure-messaging-replication"
"""The distribution's name on the package index."""


@dataclasses.dataclass(frozen=True, slots=True)
class Extra:
    """One extra: its name and the modules whose presence proves it is installed."""

    name: str
    modules: tuple[str, ...]

    def missing(self) -> tuple[str, ...]:
        """The modules of this extra that cannot be imported here."""
        return tuple(module for module in self.modules if not _importable(module))

    def install_hint(self) -> str:
        return f"pip install '{DISTRIBUTION}[{self.name}]'"


EXTRAS: dict[str, Extra] = {
    extra.name: extra
    for extra in (
        Extra(
            "monitor",
            (
                "azure.monitor.opentelemetry",
                "opentelemetry.sdk",
                "opentelemetry.exporter.otlp.proto.http",
            ),
        ),
        Extra("lint", ("pycep",)),
        Extra("local", ("proton", "json5")),
        Extra("audit", ("pyspark", "fastavro", "pandas", "pyarrow")),
    )
}


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False


def require(name: str, *, needed_by: str) -> None:
    """Return when extra ``name`` is installed; else raise its one-line error.

    Raises:
        MissingExtraError: e.g. "replication emulator needs the 'local' extra (missing: proton):
            pip install 'azure-messaging-replication[local]'".
    """
    extra = EXTRAS[name]
    missing = extra.missing()
    if missing:
        raise MissingExtraError(
            f"{needed_by} needs the '{name}' extra (missing: {', '.join(missing)}): "
            f"{extra.install_hint()}",
            extra=name,
        )


def require_java(*, needed_by: str) -> str:
    """The ``java`` that PySpark will start (``$JAVA_HOME/bin/java``, else ``java`` on
    ``PATH``), checked to be Java 17 or newer as PySpark 4 needs.

    Raises:
        MissingProgramError: no Java, or an older one; the message says what to install.
    """
    import subprocess  # only here: the commands that never need Java do not pay for it

    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    install = "install Java 17+ (e.g. sudo apt-get install openjdk-17-jre-headless)"
    if java is None or not Path(java).exists():
        where = "$JAVA_HOME/bin/java" if home else "java on PATH"
        raise MissingProgramError(f"{needed_by} needs Java 17+ and found no {where}: {install}")
    try:
        shown = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=30, check=False
        ).stderr
    except (OSError, subprocess.TimeoutExpired) as error:
        raise MissingProgramError(f"{needed_by} needs Java 17+; {java} failed: {error}") from error
    match = re.search(r'version "(\d+)', shown)
    if match is None or int(match.group(1)) < 17:
        found = f"Java {match.group(1)}" if match else "an unknown Java"
        raise MissingProgramError(f"{needed_by} needs Java 17+ and {java} is {found}: {install}")
    return java


__all__ = ["DISTRIBUTION", "EXTRAS", "Extra", "require", "require_java"]

"""The packages of the wheel; everything else about the distribution is in pyproject.toml.

The wheel holds the library (``replication`` and its subpackages) and the repository's other
top-level folders installed *inside* it, so that installing the library puts no generic
top-level name like ``patterns``, ``emulator`` or ``spark`` into an application's
site-packages (:mod:`replication.layout` finds each under either name):

- ``patterns/`` as ``replication.patterns`` (the federation patterns);
- ``emulator/`` as ``replication.emulator`` (the local emulator; extra ``local``);
- ``spark/`` as ``replication.audit`` (the duplicate audit; extra ``audit``);
- ``examples/`` as ``replication.examples`` (example topologies and code, package data);
- ``infra/`` as ``replication.infra`` (the Bicep, its workbook and the azd hook scripts,
  package data that ``replication init`` copies into a new app).

This needs code (a package list computed from the folders plus mapped folders), which
pyproject.toml's static ``[tool.setuptools]`` tables cannot express together with ``find``.
"""

from setuptools import find_packages, setup

MAPPED = {
    "replication.patterns": "patterns",
    "replication.emulator": "emulator",
    "replication.audit": "spark",
    "replication.examples": "examples",
    "replication.infra": "infra",
}

DATA_ONLY = {
    "replication.scaffold.template": ["*"],
    "replication.examples": ["*.json"],
    "replication.infra": ["*.bicep", "workbook.json", "README.md"],
    "replication.infra.modules": ["*.bicep"],
    "replication.infra.scripts": ["*.sh"],
    "replication.audit.jobs": ["*.json"],
}
"""Folders of data files, listed as packages (setuptools treats every folder as one) with the
files each ships."""

setup(
    packages=[*find_packages(include=["replication", "replication.*"]), *MAPPED, *DATA_ONLY],
    package_dir=MAPPED,
    package_data={
        "replication": ["py.typed"],
        "replication.audit": ["README.md"],
        "replication.emulator": ["README.md"],
        **DATA_ONLY,
    },
    # Data files are read from the installed folder (Bicep modules reference each other by
    # relative path), never from inside a zip.
    zip_safe=False,
)

"""The packages of the wheel; everything else about the distribution is in pyproject.toml.

The wheel holds the library (``replication`` and its subpackages) and the repository's
top-level ``patterns/`` folder installed as ``replication.patterns``, so that installing the
library puts no generic top-level name like ``patterns`` into an application's site-packages.
The repository keeps the folder at the top, where its layout puts it and where the Function
app deployed as the repository's files imports it as ``patterns``;
:func:`replication.planning.patterns_package` finds it under either name. The emulator and the
Spark audit are development tools run from a checkout and are not installed.

This needs code (a package list computed from the folders plus one mapped folder), which
pyproject.toml's static ``[tool.setuptools]`` tables cannot express together with ``find``.
"""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["replication", "replication.*"]), "replication.patterns"],
    package_dir={"replication.patterns": "patterns"},
)

"""Benchmarks: scripts that print figures (see ``docs/benchmarks.md``); run each as
``python benchmarks/NAME.py``. A package so that they can share ``_callgrind``."""

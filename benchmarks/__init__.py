"""Benchmarks: scripts that print figures (see the README's Benchmarks section); run each as
``python benchmarks/NAME.py``. A package so that they can share ``_callgrind``."""

"""Federation patterns, one pure module each, looked up by name from the topology.

Each module defines ``<Pattern>Options`` (a pydantic model of the task's ``options``) and a
``PATTERN`` record (:class:`replication.planning.Pattern`, typed by that model) whose ``plan``
turns a batch of envelopes into forwarding decisions without any I/O, and whose other fields
declare what the pattern needs from the topology (subscription rule, SQL conditions, checks).
The registry of names is :mod:`replication.planning` (``_REGISTRY``); adding a pattern is one
module here and one line there.

This folder is the ``patterns`` package of a checkout (and of the Function app deployed as the
repository's files); the wheel installs it as ``replication.patterns`` instead, so that no
generic top-level name lands in site-packages (see ``setup.py``). Its modules therefore import
each other relatively and the library by absolute ``replication.`` names, which hold in both
places. What a pattern is and returns (``Pattern``, ``Forward``, ``Skip``, ``DeadLetter``,
``Target``, ``TaskContext``) is :mod:`replication.planning`'s, which everything else imports.

Patterns depend only on the library's value modules (envelope, rules, properties, loops, SQL,
planning), never on the topology or the runtime, which depend on them.
"""

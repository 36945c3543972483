"""The two ways a replication task is hosted; neither imports the other.

- :mod:`replication.hosts.functions`: the Azure Functions app (:func:`build_app`, called by
  ``function_app.py``): one batch-triggered function per task, and the decoder of what the
  Functions host delivers to it;
- :mod:`replication.hosts.local`: the local host behind ``python -m replication run`` and
  ``demo`` (:class:`LocalHost`), and the emulator started as a child process.

This package re-exports nothing: importing one host must not import the other (the local host
needs no ``azure.functions``).
"""

__all__: list[str] = []

"""Settings for the whole suite (fixtures live beside the tests that use them).

The host-protocol tier (``tests/host/``) runs on Python 3.13 in its own environment:
``./dev.sh test`` runs it separately with ``--confcutdir=tests/host``, so this file does not
apply there, and a plain ``pytest`` on the main environment leaves it out.
"""

collect_ignore = ["host"]

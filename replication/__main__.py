"""``python -m replication``: see :mod:`replication.cli`."""

import sys

from replication.cli import main

sys.exit(main(prog="python -m replication"))

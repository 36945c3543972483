"""``python -m replication.emulator`` (``python -m emulator`` in a checkout): see :mod:`._cli`."""

import sys

from ._cli import main

sys.exit(main(prog=f"python -m {__package__}"))

"""``python -m replication.audit`` (``python -m spark`` in a checkout): the duplicate audit's
command line, :func:`.dedup_audit.main`; ``replication audit`` runs the same."""

import sys

from .dedup_audit import main

sys.exit(main(prog=f"python -m {__package__}"))

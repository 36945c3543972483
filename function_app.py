"""Azure Functions entry point: one replication function per task of the topology file.

The topology file is named by the app setting ``REPLICATION_TOPOLOGY`` (default
``topology.json`` next to this file); see README.md.
"""

from replication.hosts.functions import build_app

app = build_app()

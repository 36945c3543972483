#!/usr/bin/env bash
# Create or update the topology's namespaces, entities and replication rules with the az CLI,
# without Bicep (PRINCIPAL_ID adds the app identity's roles, LOG_ANALYTICS_WORKSPACE_ID the
# namespaces' diagnostic settings; see infra/README.md).
#   RESOURCE_GROUP=my-rg infra/scripts/provision-rules.sh [--dry-run] [TOPOLOGY]
# Idempotent: every command is a create-or-update.
set -euo pipefail
cd "$(dirname "$0")/../.."
DRY_RUN=()
if [ "${1:-}" = "--dry-run" ]; then DRY_RUN=(--dry-run); shift; fi
TOPOLOGY="${1:-${REPLICATION_TOPOLOGY:-topology.json}}"
# Checked here, before rendering: the rendered script's own check names its temporary file.
if [ -z "${RESOURCE_GROUP:-}" ]; then
    echo "error: set RESOURCE_GROUP to the resource group to provision into" >&2
    exit 2
fi
PYTHON=python3
[ -x .venv/bin/python ] && PYTHON=.venv/bin/python
script=$(mktemp)
trap 'rm -f "$script"' EXIT
"$PYTHON" -m replication render az-cli --topology "$TOPOLOGY" --output "$script"
bash "$script" "${DRY_RUN[@]}"

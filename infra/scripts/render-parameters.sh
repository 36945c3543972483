#!/usr/bin/env sh
# Render infra/main.parameters.json from the topology (default topology.json; set
# REPLICATION_TOPOLOGY to use another file, which the deployed app then reads too). The
# preprovision hook of `azd up`, in an app made with `replication init` and in the library's own
# repository: it needs nothing but requirements.txt (installed into .venv when there is none),
# which installs the library in an app, and its dependencies in the repository, where
# `python -m replication` is the checkout's.
set -eu
cd "$(dirname "$0")/../.."
TOPOLOGY="${REPLICATION_TOPOLOGY:-topology.json}"
if [ ! -f "$TOPOLOGY" ]; then
    # The library's repository has the examples in examples/; an app made by `replication init`
    # has none (init wrote its topology.json from one), but init writes any of them anew.
    if [ -d examples ]; then
        echo "error: $TOPOLOGY not found: copy one of examples/*.json to $TOPOLOGY and edit it" >&2
    else
        echo "error: $TOPOLOGY not found: write one, or start from an example:" \
            "\`replication init DIR --example NAME\` writes DIR/topology.json" \
            "(\`replication init --help\` lists the examples)" >&2
    fi
    exit 1
fi
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
    .venv/bin/python -m pip install --quiet -r requirements.txt
fi
# Checks the topology's SQL rules, and infra/'s Bicep literals where the `lint` extra is installed.
.venv/bin/python -m replication lint-rules --topology "$TOPOLOGY"
# The app setting REPLICATION_TOPOLOGY names the same file, relative to the app's root.
.venv/bin/python -m replication render bicep-params --topology "$TOPOLOGY" \
    --deployed-topology "$TOPOLOGY" --output infra/main.parameters.json

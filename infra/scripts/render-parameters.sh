#!/usr/bin/env sh
# Render infra/main.parameters.json from the topology (default topology.json; set
# REPLICATION_TOPOLOGY to use another file). Used by `azd up` as its preprovision hook, in this
# repository and in an app made with `replication init`: it needs nothing but requirements.txt
# (installed into .venv when there is none), which installs the library in such an app and its
# dependencies in this repository, where `python -m replication` is the checkout's.
set -eu
cd "$(dirname "$0")/../.."
TOPOLOGY="${REPLICATION_TOPOLOGY:-topology.json}"
if [ ! -f "$TOPOLOGY" ]; then
    # This repository has the examples in examples/; an app made by `replication init` has none
    # (init wrote its topology.json from one), but init writes any of them into a new folder.
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
.venv/bin/python -m replication render bicep-params --topology "$TOPOLOGY" \
    --output infra/main.parameters.json

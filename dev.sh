#!/usr/bin/env bash
# The project's two entry points, for a fresh Debian/Ubuntu machine with Python 3.11+:
#
#   ./dev.sh demo    set everything up, then run the showcase: every pattern on the local
#                    emulator, counted, the mesh audited with Spark (arguments go to
#                    `python -m replication demo`, e.g. --only mesh, or --topology FILE)
#   ./dev.sh test    set everything up, then run linters, type checks and the whole test suite
#   ./dev.sh bench   set everything up, then run the benchmarks (prints their figures)
#   ./dev.sh infra   set up, then run only the infrastructure checks (tests/infra)
#
# Setup is idempotent: it creates .venv, installs requirements-dev.txt (again only when it
# changed), installs Java 17 with apt-get when PySpark needs it and none is present, and for
# the tests installs Azurite from npm (package-lock.json) into node_modules/ and creates
# .venv-host, a Python 3.13 environment with the Functions Python worker runtime for the
# host-protocol tests (tests/host/), and .venv-azcli / .venv-checkov, the Azure CLI and checkov
# that the infrastructure checks (tests/infra/) run, each in an environment of its own.
set -euo pipefail
cd "$(dirname "$0")"

PYTHON="${PYTHON:-python3}"
VENV=".venv"
HOST_VENV=".venv-host"
# The compiled FunctionRpc protocol ships in this wheel (see tests/host/install_rpc.py).
RPC_WHEEL="azure-functions-runtime-v1==1.2.0"

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

ensure_python() {
    if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
        echo "error: Python 3.11 or newer is required (found: $("$PYTHON" --version 2>&1))" >&2
        exit 1
    fi
}

ensure_java() {
    # PySpark 4 needs Java 17 or newer.
    local version
    version=$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n 1 || true)
    if [ -n "$version" ] && [ "$version" -ge 17 ]; then
        return
    fi
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
        log "installing Java 17 (openjdk-17-jre-headless) for PySpark"
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null
    else
        echo "error: PySpark needs Java 17+; install it (e.g. sudo apt-get install openjdk-17-jre-headless)" >&2
        exit 1
    fi
}

ensure_node_tools() {
    # Azurite (blob storage for Event Hubs checkpoints in tests), pinned in package-lock.json.
    if ! command -v npm >/dev/null; then
        if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
            log "installing Node.js and npm for Azurite"
            apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
        else
            echo "error: Azurite needs Node.js 18+ and npm (e.g. sudo apt-get install nodejs npm)" >&2
            exit 1
        fi
    fi
    local stamp="node_modules/.package-lock.sha256"
    local wanted
    wanted=$(sha256sum package-lock.json | cut -d' ' -f1)
    if [ ! -x node_modules/.bin/azurite-blob ] || [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
        log "installing Azurite (npm ci)"
        npm ci --no-audit --no-fund --loglevel=error
        echo "$wanted" > "$stamp"
    fi
}

ensure_venv() {
    ensure_python
    if [ ! -x "$VENV/bin/python" ]; then
        log "creating $VENV"
        "$PYTHON" -m venv "$VENV"
    fi
    local stamp="$VENV/.requirements.sha256"
    local wanted
    wanted=$(cat requirements.txt requirements-dev.txt | sha256sum | cut -d' ' -f1)
    if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$wanted" ]; then
        log "installing Python packages (requirements-dev.txt)"
        "$VENV/bin/python" -m pip install --quiet --upgrade pip
        "$VENV/bin/python" -m pip install --quiet -r requirements-dev.txt
        echo "$wanted" > "$stamp"
    fi
}

find_python313() {
    # The worker runtime the host-protocol tests drive needs Python 3.13 (HOST_PYTHON overrides).
    local candidate
    for candidate in "${HOST_PYTHON:-}" python3.13 "$HOME"/.pyenv/versions/3.13*/bin/python3.13 \
        /usr/local/bin/python3.13 /usr/bin/python3.13; do
        if [ -n "$candidate" ] && command -v "$candidate" >/dev/null 2>&1 &&
            "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 13))' 2>/dev/null; then
            echo "$candidate"
            return
        fi
    done
    echo "error: the host-protocol tests need Python 3.13; install it (pyenv install 3.13) or set HOST_PYTHON" >&2
    exit 1
}

ensure_host_venv() {
    local python stamp wanted
    if [ ! -x "$HOST_VENV/bin/python" ]; then
        python=$(find_python313)
        log "creating $HOST_VENV with $python"
        "$python" -m venv "$HOST_VENV"
    fi
    stamp="$HOST_VENV/.requirements.sha256"
    wanted=$( (cat requirements.txt requirements-host.txt; echo "$RPC_WHEEL") | sha256sum | cut -d' ' -f1)
    if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$wanted" ]; then
        log "installing the host-protocol test environment (requirements-host.txt, $RPC_WHEEL)"
        "$HOST_VENV/bin/python" -m pip install --quiet --upgrade pip
        "$HOST_VENV/bin/python" -m pip install --quiet -r requirements-host.txt
        rm -rf "$HOST_VENV/wheels" "$HOST_VENV/rpc"
        "$HOST_VENV/bin/python" -m pip download --quiet --no-deps --dest "$HOST_VENV/wheels" "$RPC_WHEEL"
        "$HOST_VENV/bin/python" tests/host/install_rpc.py "$HOST_VENV"/wheels/*.whl "$HOST_VENV/rpc" >/dev/null
        echo "$wanted" > "$stamp"
    fi
}

# The infrastructure checks' third-party tools, each in its own environment because their pinned
# dependencies clash with the project's: the Azure CLI (requirements-azcli.txt, .venv-azcli) and
# checkov (requirements-checkov.txt, .venv-checkov). Reinstalled only when the file changes.
ensure_tool_venv() {
    local venv="$1" requirements="$2" stamp wanted
    ensure_python
    if [ ! -x "$venv/bin/python" ]; then
        log "creating $venv"
        "$PYTHON" -m venv "$venv"
    fi
    stamp="$venv/.requirements.sha256"
    wanted=$(sha256sum "$requirements" | cut -d' ' -f1)
    if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$wanted" ]; then
        log "installing $requirements into $venv"
        "$venv/bin/python" -m pip install --quiet --upgrade pip
        "$venv/bin/python" -m pip install --quiet -r "$requirements"
        echo "$wanted" > "$stamp"
    fi
}

ensure_infra_tools() {
    ensure_tool_venv .venv-azcli requirements-azcli.txt
    ensure_tool_venv .venv-checkov requirements-checkov.txt
}

run_infra() {
    ensure_venv
    ensure_infra_tools
    log "pytest: infrastructure (Bicep evaluation, Azure schemas, the az CLI, checkov)"
    "$VENV/bin/python" -m pytest tests/infra "$@"
}

run_demo() {
    ensure_venv
    ensure_java
    log "demo: every replication pattern through the local emulator, the mesh audited with Spark"
    "$VENV/bin/python" -m replication demo --output demo-output "$@"
}

run_tests() {
    ensure_venv
    ensure_java
    ensure_node_tools
    ensure_host_venv
    ensure_infra_tools
    log "ruff (lint and format)"
    "$VENV/bin/ruff" check .
    "$VENV/bin/ruff" format --check .
    log "mypy (strict)"
    "$VENV/bin/mypy" replication patterns emulator spark tests benchmarks examples function_app.py
    log "pytest"
    "$VENV/bin/python" -m pytest "$@"
    log "pytest: host-protocol tier (Python 3.13, the Functions Python worker runtime)"
    REPLICATION_EMULATOR_PYTHON="$PWD/$VENV/bin/python" \
        "$HOST_VENV/bin/python" -m pytest --confcutdir=tests/host -p no:cacheprovider tests/host
}

run_bench() {
    ensure_venv
    ensure_java
    ensure_host_venv
    ensure_node_tools  # Azurite: bench_failover.py's binding store
    for script in benchmarks/bench_*.py; do
        log "$script"
        case "$script" in
            # Scripts that drive the Functions Python worker run on Python 3.13 (.venv-host).
            benchmarks/bench_host_*) "$HOST_VENV/bin/python" "$script" ;;
            *) "$VENV/bin/python" "$script" ;;
        esac
    done
}

case "${1:-}" in
    demo) shift; run_demo "$@" ;;
    test) shift; run_tests "$@" ;;
    bench) shift; run_bench "$@" ;;
    infra) shift; run_infra "$@" ;;
    *) echo "usage: $0 demo|test|bench|infra" >&2; exit 2 ;;
esac

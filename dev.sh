#!/usr/bin/env bash
# The project's two entry points, for a fresh Debian/Ubuntu machine with Python 3.11+:
#
#   ./dev.sh demo    set everything up, then run the showcase: every pattern on the local
#                    emulator, counted, the mesh audited with Spark (arguments go to
#                    `python -m replication demo`, e.g. --only mesh, or --topology FILE)
#   ./dev.sh check   the inner loop: ruff, mypy and the fast test tier (no emulator, no Spark)
#   ./dev.sh test    set everything up, then run linters, type checks and every test tier (what
#                    CI runs), and print each step's time
#   ./dev.sh bench   set everything up, then run the benchmarks (prints their figures)
#   ./dev.sh infra   set up, then run only the infrastructure checks (tests/infra)
#
# Setup is idempotent: it creates .venv, installs requirements-dev.txt (again only when it
# changed), installs Java 17 with apt-get when PySpark needs it and none is present, installs
# Azurite from npm (package-lock.json) into node_modules/ (Node.js with apt-get when missing),
# and for the tests creates .venv-host, a Python 3.13 environment with the Functions Python
# worker runtime for the host-protocol tests (tests/host/), and .venv-azcli / .venv-checkov,
# the Azure CLI and checkov that the infrastructure checks (tests/infra/) run, each in an
# environment of its own, and Debian's chromium (apt-get, as root) for the audit report's
# screenshot test.
set -euo pipefail
cd "$(dirname "$0")"

# Python writes its bytecode caches (__pycache__/, ignored by git) during these runs. Hundreds of
# processes (pytest's workers, every command a test runs, the emulators, the packaging tier's
# clean environments, installed without byte-compiling) import the same modules; with
# PYTHONDONTWRITEBYTECODE set, as on this project's build machines, every one of them compiled
# them again: 1.9 s of CPU for each process that imports the Azure SDKs and pydantic uncompiled,
# against 0.7 s from the caches (one process each, 2026-11-29).
unset PYTHONDONTWRITEBYTECODE

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

ensure_chromium() {
    # Headless Chromium for the audit report's screenshot test (tests/spark/test_report_page.py).
    # Where it cannot be installed that test is skipped, saying so; nothing else needs it.
    if command -v chromium >/dev/null || command -v chromium-browser >/dev/null; then
        return
    fi
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
        log "installing Chromium (chromium) for the audit report's screenshot test"
        { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } ||
            log "could not install chromium: the audit report's screenshot test will be skipped"
    else
        log "no chromium (install it with: sudo apt-get install chromium): the audit report's screenshot test will be skipped"
    fi
}

ensure_node_tools() {
    # Azurite (blob storage: Event Hubs checkpoints in tests, the failover binding store in the
    # demo and the tests), pinned in package-lock.json.
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

# The project's own environments install with uv (from PyPI, into .venv first): on a clean
# machine, without caches, pip took 119 s of CPU and 123 s for requirements-dev.txt, uv 74 s of
# CPU (most of it byte-compiling, on both cores) and 41 s; for the Azure CLI's environment 23.5
# against 2.5 s of CPU (2026-11-29). What users install with stays pip: the packaging tier and
# the app scaffold's requirements.txt use it, as the Functions remote build does.
UV_VERSION="0.13.9"

ensure_uv() {
    case "$("$VENV/bin/python" -m uv --version 2>/dev/null)" in
        "uv $UV_VERSION "*) ;;
        *) "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "uv==$UV_VERSION" ;;
    esac
}

# uv_install VENV [UV PIP INSTALL ARGS...]: install into the environment VENV. With the
# system's certificates, as pip is configured here (PIP_CERT): these machines reach PyPI through
# a proxy whose certificate authority is in the system store, unknown to uv's own roots.
uv_install() {
    local venv="$1"
    shift
    "$VENV/bin/python" -m uv pip install --quiet --system-certs --python "$venv/bin/python" "$@"
}

# The environments are byte-compiled when they install (pip's default). With --no-compile a clean
# checkout's setup took 33 s less, but the tiers then compiled what they import, in several
# processes at once: the whole run used more CPU (2,057 against 1,935 core-seconds; one clean
# run of each, 2026-11-29).
ensure_venv() {
    ensure_python
    if [ ! -x "$VENV/bin/python" ]; then
        log "creating $VENV"
        "$PYTHON" -m venv "$VENV"
    fi
    ensure_uv
    local stamp="$VENV/.requirements.sha256"
    local wanted
    wanted=$(cat requirements.txt requirements-dev.txt | sha256sum | cut -d' ' -f1)
    if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$wanted" ]; then
        log "installing Python packages (requirements-dev.txt)"
        uv_install "$VENV" --compile-bytecode -r requirements-dev.txt
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
        uv_install "$HOST_VENV" --compile-bytecode -r requirements-host.txt
        rm -rf "$HOST_VENV/wheels" "$HOST_VENV/rpc"
        "$HOST_VENV/bin/python" -m pip download --quiet --no-deps --dest "$HOST_VENV/wheels" "$RPC_WHEEL"
        "$HOST_VENV/bin/python" tests/host/install_rpc.py "$HOST_VENV"/wheels/*.whl "$HOST_VENV/rpc" >/dev/null
        echo "$wanted" > "$stamp"
    fi
}

# The infrastructure checks' third-party tools, each in its own environment because their pinned
# dependencies clash with the project's: the Azure CLI (requirements-azcli.txt, .venv-azcli) and
# checkov (requirements-checkov.txt, .venv-checkov). Reinstalled only when the file changes.
# Installed without byte-compiling (uv's default): the tests import a small part of them (an
# `az` command loads about 500 of the Azure CLI's 13,000 modules), compiled on first use and
# cached. Compiling the whole Azure CLI at install took 57 s of CPU, the `az` commands a few.
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
        uv_install "$venv" -r "$requirements"
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
    ensure_node_tools  # Azurite: the binding store of the failover scenario
    log "demo: every replication pattern through the local emulator, the mesh audited with Spark"
    "$VENV/bin/python" -m replication demo --output demo-output "$@"
}

# The wall time of each step of `./dev.sh test` and `./dev.sh check`, printed at the end (also
# when a step fails). Steps run one after another; inside a test tier, pytest-xdist runs tests on
# several processes (tests/conftest.py says what each tier needs).
STEP_TIMES=()
RUN_STARTED=$SECONDS

machine_ticks() {
    # "BUSY ALL": the clock ticks of every core since boot, busy and all (/proc/stat's first line).
    local _cpu user nice system idle iowait irq softirq steal _rest
    read -r _cpu user nice system idle iowait irq softirq steal _rest < /proc/stat
    echo "$((user + nice + system + irq + softirq + steal))" \
        "$((user + nice + system + idle + iowait + irq + softirq + steal))"
}
read -r BUSY_AT_START ALL_AT_START <<< "$(machine_ticks)"
STEP=""
STEP_STARTED=0

timed() {
    # timed NAME COMMAND...: run COMMAND and note its wall time under NAME. COMMAND runs under
    # `set -e` as usual (no `||` here, which would switch that off inside it); when it fails,
    # the EXIT trap notes the step as failed.
    STEP=$1
    STEP_STARTED=$SECONDS
    shift
    "$@"
    STEP_TIMES+=("$(printf '%-9s %5d s' "$STEP" $((SECONDS - STEP_STARTED)))")
    STEP=""
}

FAILED_TIERS=()

tier() {
    # tier NAME COMMAND...: like `timed`, but a failing test tier is noted and the run goes on,
    # so that one run reports the failures of every tier; run_tests fails at its end. COMMAND
    # returns its status itself (`set -e` is off inside an `||`): pytest_tier and host_tier do.
    local name=$1 started=$SECONDS status=0
    shift
    "$@" || status=$?
    STEP_TIMES+=("$(printf '%-9s %5d s' "$name" $((SECONDS - started)))$(
        [ "$status" -eq 0 ] || printf '  (failed, exit %d)' "$status")")
    [ "$status" -eq 0 ] || FAILED_TIERS+=("$name")
}

print_step_times() {
    if [ -n "$STEP" ]; then
        STEP_TIMES+=("$(printf '%-9s %5d s  (failed)' "$STEP" $((SECONDS - STEP_STARTED)))")
    fi
    [ "${#STEP_TIMES[@]}" -gt 0 ] || return 0
    local busy all
    read -r busy all <<< "$(machine_ticks)"
    busy=$((busy - BUSY_AT_START))
    all=$((all - ALL_AT_START))
    log "times: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)," \
        "the machine busy $((busy / $(getconf CLK_TCK))) of $((all / $(getconf CLK_TCK)))" \
        "core-seconds ($((all > 0 ? 100 * busy / all : 0)) %)"
    printf '  %s\n' "${STEP_TIMES[@]}" >&2
    printf '  %-9s %5d s\n' total $((SECONDS - RUN_STARTED)) >&2
}

lint() {
    log "ruff (lint and format)"
    # `&&`: in a lane `set -e` is off, and the first check's failure must not be lost.
    "$VENV/bin/ruff" check . && "$VENV/bin/ruff" format --check .
}

typecheck() {
    log "mypy (strict)"
    "$VENV/bin/mypy" replication patterns emulator spark tests benchmarks examples docs/hooks \
        function_app.py
}

# Processes per tier (pytest-xdist). The tools tier is CPU-bound: one per core. The fast tier
# mostly is, but its deadline, lock-renewal and hanging-call tests wait on clocks: three processes
# on 2 cores overlap those waits (a quiet machine: 41-42 s against 49.5 s with two, for 6 more
# CPU-seconds of collecting in a third process). The emulator and fault tiers mostly wait on the
# wire (SDK link setup, lock expiry, outages they cause), so more processes than cores overlap
# those waits; every test there serves its own emulators on free ports with its own tmp_path.
# The Spark tier goes by file (--dist loadfile):
# a file's Spark tests share one SparkSession, and the showcase's tests share one run of it. Its
# longest files are the two demos' (test_demo.py, test_demo_topology.py): three processes run
# them beside the Spark tests.
# The tools tier groups checkov's tests (--dist loadgroup) so that one process scans once.
# The package tier waits on pip and on the processes of the installed commands: three processes.
# The docs tier builds the site once per process (mkdocs build --strict) and runs the pages' code
# blocks in page order: by file, so one process has a page's blocks and the build is shared.
TIER_WORKERS=(fast:3 emulator:6 faults:5 spark:3:loadfile samples:2 tools:2:loadgroup package:3
    docs:2:loadfile)
# The host tier's tests wait on the worker and the emulator (each process starts its own pair).
HOST_WORKERS=3

pytest_tier() {
    # pytest_tier TIER [PYTEST ARGS...]: one tier of tests/conftest.py.
    local tier=$1 entry name workers=1 dist=load workers_ dist_ status=0
    shift
    for entry in "${TIER_WORKERS[@]}"; do
        IFS=: read -r name workers_ dist_ <<< "$entry"
        if [ "$name" = "$tier" ]; then
            workers=$workers_
            dist=${dist_:-load}
        fi
    done
    log "pytest: $tier tier ($workers process(es))"
    local parallel=() paths=()
    [ "$workers" -gt 1 ] && parallel=(-n "$workers" --dist "$dist")
    # Only the tier's folders are collected (TIER_PATHS in tests/conftest.py): every process
    # collects what it is given.
    read -r -a paths <<< "$("$VENV/bin/python" -c \
        "from tests.conftest import TIER_PATHS; print(*TIER_PATHS['$tier'])")"
    # --durations: the slowest tests in the log, to see where a long run went.
    "$VENV/bin/python" -m pytest --tier="$tier" "${parallel[@]}" --durations=10 "${paths[@]}" "$@" ||
        status=$?
    # Exit 5 (no tests collected) fails CI, unless the caller's arguments narrowed the run.
    if [ "$status" -eq 5 ] && [ "$#" -gt 0 ]; then
        log "no $tier tests among the arguments"
        return 0
    fi
    return "$status"
}

host_tier() {
    log "pytest: host-protocol tier (Python 3.13, the Functions Python worker runtime)"
    REPLICATION_EMULATOR_PYTHON="$PWD/$VENV/bin/python" \
        "$HOST_VENV/bin/python" -m pytest --confcutdir=tests/host -p no:cacheprovider \
        -n "$HOST_WORKERS" tests/host
}

# The lanes of `./dev.sh test`: each a list of steps run in this order, the lanes side by side
# (see run_tests). The longest is the wire-bound one; the others share the machine's CPU with it.
LANES=(
    "emulator faults"
    "ruff mypy fast tools samples docs"
    "spark host"
    "package"
)

# What the test tiers need beyond .venv (installed first). They install in the background while
# ruff, mypy and the first tiers run; a tier waits for what it needs (see lane). "system" is
# Node.js with Azurite, then Java and Chromium, one after another because each may run apt-get,
# which holds dpkg's lock; the tiers that need only Azurite start once it is there (wait_for_node).
BACKGROUND_SETUPS=(system host azcli checkov)

start_background_setups() {
    # One background job per environment; each writes its exit status to $RESULTS/setup-NAME
    # when it ends (lanes are subshells, which cannot `wait` for their parent's jobs).
    local name
    for name in "${BACKGROUND_SETUPS[@]}"; do
        (
            # The setup runs as a job of its own and its status is taken with `wait`: under an
            # `||` bash would switch `set -e` off inside it, and a failing install would go on.
            (
                case "$name" in
                    host) ensure_host_venv ;;
                    azcli) ensure_tool_venv .venv-azcli requirements-azcli.txt ;;
                    checkov) ensure_tool_venv .venv-checkov requirements-checkov.txt ;;
                    system)
                        ensure_node_tools
                        touch "$RESULTS/node-ready"
                        ensure_java
                        ensure_chromium
                        ;;
                esac
            ) > "$RESULTS/setup-$name.log" 2>&1 &
            status=0
            wait $! || status=$?
            echo "$status" > "$RESULTS/setup-$name"
        ) &
    done
}

wait_for_setups() {
    # wait_for_setups NAME...: block until those background setups ended; fail (showing the
    # setup's output) when one failed.
    local name status=0
    for name in "$@"; do
        while [ ! -f "$RESULTS/setup-$name" ]; do sleep 1; done
        if [ "$(cat "$RESULTS/setup-$name")" != 0 ]; then
            cat "$RESULTS/setup-$name.log" >&2
            log "setup of $name failed"
            status=1
        fi
    done
    return "$status"
}

wait_for_node() {
    # Node.js and Azurite, the first part of the "system" setup: ready before Java and Chromium.
    while [ ! -f "$RESULTS/node-ready" ] && [ ! -f "$RESULTS/setup-system" ]; do sleep 1; done
    [ -f "$RESULTS/node-ready" ] || wait_for_setups system
}

lane() {
    # lane TIER...: run the tiers one after another, each tier's output kept in a file and shown
    # whole when the tier ends (the lanes run side by side; flock keeps their output apart).
    # Each tier's time and status go to $RESULTS/times, failures to $RESULTS/failed.
    # The CPU time of each tier is what the lane's subshell gathers from the processes it waited
    # for (cutime and cstime in /proc/PID/stat, clock ticks): the tiers share two cores, so their
    # CPU seconds, not their wall time, say which one makes the run long.
    local tier started status stat cpu_before ticks
    ticks=$(getconf CLK_TCK)
    for tier in "$@"; do
        started=$SECONDS
        status=0
        read -r -a stat < "/proc/$BASHPID/stat"
        cpu_before=$((stat[15] + stat[16]))
        case "$tier" in
            ruff) lint ;;
            mypy) typecheck ;;
            tools) {
                wait_for_node && wait_for_setups azcli checkov &&
                    pytest_tier tools "${TIER_ARGS[@]}"
            } ;;
            host) { wait_for_setups host && host_tier; } ;;
            # Azurite (Node.js) for the failover binding store and Event Hubs checkpoints (the
            # package tier's drill from the installed library too).
            emulator | faults | package) { wait_for_node && pytest_tier "$tier" "${TIER_ARGS[@]}"; } ;;
            # Java for Spark, Chromium for the report page's screenshot, Azurite for the demo.
            spark) { wait_for_setups system && pytest_tier spark "${TIER_ARGS[@]}"; } ;;
            # mkdocs build --strict, the pages' code blocks, their screenshots (Chromium).
            docs) { wait_for_setups system && pytest_tier docs "${TIER_ARGS[@]}"; } ;;
            *) pytest_tier "$tier" "${TIER_ARGS[@]}" ;;
        esac > "$RESULTS/$tier.log" 2>&1 || status=$?
        read -r -a stat < "/proc/$BASHPID/stat"
        (
            flock 9
            cat "$RESULTS/$tier.log" >&2
            printf '%s %d %d %d\n' "$tier" $((SECONDS - started)) "$status" \
                $(((stat[15] + stat[16] - cpu_before) / ticks)) >> "$RESULTS/times"
        ) 9> "$RESULTS/output.lock"
    done
}

run_check() {
    # The inner loop: ruff, mypy and the fast tier; arguments go to pytest.
    trap print_step_times EXIT
    timed setup ensure_venv
    timed ruff lint
    timed mypy typecheck
    timed fast pytest_tier fast "$@"
}

run_tests() {
    # Everything CI runs; arguments go to each tier's pytest (not to the host tier's).
    #
    # .venv is installed first; everything else installs in the background meanwhile (see
    # BACKGROUND_SETUPS). Then the LANES run side by side: most tiers spend their time waiting
    # (on the emulators' wire, on lock expiry and the outages the fault tests cause, on Java and
    # the worker starting), not computing. Two lanes left the 2-core machine about half idle
    # (1.1 cores busy on average); in three, the CPU-heavy steps (mypy, the fast and Spark
    # tiers) run beside the two long wire-bound tiers and beside each other. A failing ruff or
    # mypy fails the run at its end, like a failing tier, after every tier has run.
    trap print_step_times EXIT
    RESULTS=$(mktemp -d)
    TIER_ARGS=("$@")
    timed setup ensure_venv
    start_background_setups
    local started=$SECONDS tier seconds status steps pids=()
    for steps in "${LANES[@]}"; do
        # shellcheck disable=SC2086  # a lane is a list of step names
        lane $steps &
        pids+=($!)
    done
    wait "${pids[@]}" || true
    while read -r tier seconds status cpu; do
        STEP_TIMES+=("$(printf '%-9s %5d s  %5d s CPU' "$tier" "$seconds" "$cpu")$(
            [ "$status" -eq 0 ] || printf '  (failed, exit %d)' "$status")")
        [ "$status" -eq 0 ] || FAILED_TIERS+=("$tier")
    done < "$RESULTS/times"
    local joined
    joined=$(printf ' | %s' "${LANES[@]}")
    STEP_TIMES+=("$(printf '%-9s %5d s  (%s)' lanes $((SECONDS - started)) "${joined:3}")")
    # shellcheck disable=SC2048,SC2086  # every step of every lane, split on spaces
    for tier in ${LANES[*]}; do
        grep -q "^$tier " "$RESULTS/times" || FAILED_TIERS+=("$tier (did not run)")
    done
    rm -rf "$RESULTS"
    if [ "${#FAILED_TIERS[@]}" -gt 0 ]; then
        log "failed tiers: ${FAILED_TIERS[*]}"
        return 1
    fi
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
    check) shift; run_check "$@" ;;
    test) shift; run_tests "$@" ;;
    bench) shift; run_bench "$@" ;;
    infra) shift; run_infra "$@" ;;
    *) echo "usage: $0 demo|check|test|bench|infra" >&2; exit 2 ;;
esac

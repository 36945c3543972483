"""The dependency direction of the code base, checked from the source.

Every ``import`` of the project's packages (``replication``, ``patterns``, ``emulator``,
``spark``), at module level, inside functions and under ``TYPE_CHECKING`` alike, is an edge of
a module graph. Importing ``pkg.sub`` from outside ``pkg`` also runs ``pkg/__init__.py`` first,
so it is an edge to ``pkg`` too. The tests assert that this graph has no cycle (so no import,
local or not, can exist to dodge one), that the layers only point down, and that each package
imports cleanly when it is the first thing a fresh interpreter imports.

The library's packages, bottom up: the leaf value modules at the root (``envelope``,
``exceptions``, ``properties``, ``planning`` (the pattern contract and registry), ...), ``sql``,
``rules``, ``telemetry``, ``transforms`` (user code's contract); ``patterns``;
``topology``; ``runtime``; ``transport`` (the only importer of the Azure SDKs); ``heartbeats``
(its core below ``transport``, its host wiring above) and ``operations`` (the operator
commands' logic, never a host); the two ``hosts``, which never import each other; ``cli``.
"""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from replication.planning import PatternOptions
from replication.rules import SpecModel

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("replication", "patterns", "emulator", "spark")

# What each layer may import from the project (prefixes). The library's bottom layer comes
# first; a module may use anything listed for it and nothing else of the project.
BOTTOM = (
    "replication.durations",
    "replication.envelope",
    "replication.exceptions",
    "replication.exit_codes",
    "replication.extras",
    "replication.layout",
    "replication.loops",
    "replication.planning",
    "replication.properties",
    "replication.rules",
    "replication.settings",
    "replication.sql",
    "replication.telemetry",
    "replication.transforms",
    "replication.values",
)
ALLOWED: dict[str, tuple[str, ...]] = {
    "replication.sql": ("replication.sql", "replication.envelope", "replication.exceptions"),
    "replication.rules": ("replication.rules", "replication.sql"),
    "patterns": ("patterns", *BOTTOM),
    "replication.topology": ("replication.topology", "patterns", *BOTTOM),
    "replication.runtime": ("replication.runtime", "replication.topology", "patterns", *BOTTOM),
    "replication.capacity": ("replication.capacity", "replication.topology", "patterns", *BOTTOM),
    # The heartbeat feature's core (messages, ages, gauge) sits below the transport that reads
    # heartbeats; only its two host wirings (``functions``, ``local``) sit above.
    "replication.heartbeats._": (
        "replication.heartbeats._",
        "replication.runtime",
        "replication.topology",
        *BOTTOM,
    ),
    # The failover feature's decisions (log, origin, bindings, follower, publisher choice, state,
    # checkpoint arithmetic) import no transport; only its client wirings (``publishers``,
    # ``consumers``, ``event_hub_consumer``) and the package root, which re-exports them, do.
    "replication.failover._": ("replication.failover._", "replication.topology", *BOTTOM),
    # The Service Bus capture's core (format, writer, runner) imports no transport; the hosts
    # wire it to a receive loop and a blob store.
    "replication.capture": (
        "replication.capture",
        "replication.runtime",
        "replication.topology",
        *BOTTOM,
    ),
}
# What a package must never import (prefixes), beyond what ALLOWED already rules out.
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "replication.transport": (
        "replication.hosts",
        "replication.cli",
        "replication.heartbeats.functions",
        "replication.heartbeats.local",
        "replication.operations",
    ),
    "replication.heartbeats": ("replication.hosts", "replication.cli"),
    "replication.operations": ("replication.hosts", "replication.cli"),
    "replication.hosts.functions": ("replication.hosts.local", "replication.cli"),
    "replication.hosts.local": ("replication.hosts.functions", "replication.cli"),
}
SDK_MODULES = (
    "azure.servicebus",
    "azure.eventhub",
    "azure.identity",
    "azure.keyvault",
    "azure.storage",
    "azure.core",
)
# The Functions programming model is the Functions host's: its app and its heartbeat triggers.
FUNCTIONS_HOST = ("replication.hosts.functions", "replication.heartbeats.functions")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _sources() -> Iterator[tuple[str, Path]]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            yield _module_name(path), path


@functools.cache
def _imports(name: str, path: Path) -> tuple[str, ...]:
    """Absolute names of every module ``path`` imports (``from x import y``: x, and x.y).
    Parsed once per run: several tests walk every module's imports."""
    return tuple(_parse_imports(name, path))


def _parse_imports(name: str, path: Path) -> Iterator[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


MODULES = dict(_sources())


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in MODULES}
    for name, path in MODULES.items():
        for imported in _imports(name, path):
            if imported not in MODULES or imported == name:
                continue
            graph[name].add(imported)
            # Importing pkg.sub from outside pkg runs pkg/__init__.py first.
            parts = imported.split(".")
            for depth in range(1, len(parts)):
                parent = ".".join(parts[:depth])
                if not name.startswith(parent + ".") and name != parent:
                    graph[name].add(parent)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph[node]):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _inside_one_package(cycle: list[str]) -> bool:
    # A package's __init__ importing its own submodules, which import each other, is how
    # packages are built: Python initializes the package first. Only cycles that reach outside
    # a package are dependency cycles.
    package = min(cycle, key=len)
    return all(member == package or member.startswith(package + ".") for member in cycle)


def test_the_project_module_graph_has_no_cycle() -> None:
    cycles = [c for c in _cycles(_graph()) if not _inside_one_package(c)]
    assert cycles == []


def test_layers_only_import_downwards() -> None:
    graph = _graph()
    problems = []
    for name, imported in graph.items():
        rule = next((prefix for prefix in ALLOWED if _within(name, prefix)), None)
        if rule is None:
            continue
        problems += [
            f"{name} imports {target}"
            for target in sorted(imported)
            if not any(_within(target, allowed) for allowed in ALLOWED[rule])
            and target not in _parents(name)
            and target != "replication"  # the root package is bottom layer (next test)
        ]
    assert problems == []


def test_the_library_root_package_is_bottom_layer() -> None:
    """Everything imports ``replication/__init__.py`` on the way; it must import no upper layer."""
    imported = _graph()["replication"]
    assert sorted(t for t in imported if not any(_within(t, b) for b in BOTTOM)) == []


def test_the_library_never_imports_the_emulator_the_audit_or_the_tests() -> None:
    """Under either name (a checkout's top-level package, or the wheel's ``replication.*``):
    the commands that run them find them through ``replication.layout`` and import them only
    when chosen (``replication.cli.emulator``, ``replication.cli.audit``)."""
    installed = ("replication.emulator", "replication.audit")
    problems = [
        f"{name} imports {target}"
        for name, path in MODULES.items()
        if _within(name, "replication") or _within(name, "patterns")
        for target in _imports(name, path)
        if target.split(".")[0] in ("emulator", "spark", "tests")
        or any(_within(target, part) for part in installed)
    ]
    assert problems == []


def test_only_the_transport_package_imports_the_messaging_sdks() -> None:
    problems = [
        f"{name} imports {target}"
        for name, path in MODULES.items()
        if (_within(name, "replication") or _within(name, "patterns"))
        and not _within(name, "replication.transport")
        for target in _imports(name, path)
        if any(_within(target, sdk) for sdk in SDK_MODULES)
    ]
    assert problems == []


def test_packages_never_import_what_sits_above_them() -> None:
    problems = [
        f"{name} imports {target}"
        for name, imported in _graph().items()
        for package, forbidden in FORBIDDEN.items()
        if _within(name, package)
        for target in sorted(imported)
        if any(_within(target, above) for above in forbidden)
    ]
    assert problems == []


def test_only_the_functions_host_imports_the_functions_library() -> None:
    problems = [
        f"{name} imports {target}"
        for name, path in MODULES.items()
        if (_within(name, "replication") or _within(name, "patterns"))
        and not any(_within(name, host) for host in FUNCTIONS_HOST)
        for target in _imports(name, path)
        if _within(target, "azure.functions")
    ]
    assert problems == []


def _within(name: str, prefix: str) -> bool:
    """``name`` is ``prefix`` or inside it; a prefix ending in ``_`` matches by its start."""
    if prefix.endswith("_"):
        return name.startswith(prefix)
    return name == prefix or name.startswith(prefix + ".")


def _parents(name: str) -> set[str]:
    parts = name.split(".")
    return {".".join(parts[:depth]) for depth in range(1, len(parts))}


ENTRY_MODULES = [
    "replication",
    "replication.rules",
    "replication.topology",
    "replication.runtime",
    "replication.telemetry",
    "replication.transforms",
    "replication.heartbeats",
    "replication.transport.servicebus",
    "replication.transport.eventhubs",
    "replication.operations",
    "replication.hosts",
    "replication.hosts.functions",
    "replication.hosts.local",
    "replication.cli",
    "patterns",
    *sorted(name for name in MODULES if name.startswith("patterns.") and "._" not in name),
]


LIBRARIES_FIRST = (
    "pydantic",
    "azure.servicebus",
    "azure.servicebus.aio",
    "azure.eventhub",
    "azure.eventhub.aio",
    "azure.eventhub.extensions.checkpointstoreblob",
    "azure.storage.blob",
    "azure.identity",
    "azure.functions",
    "opentelemetry.metrics",
    "rich.console",
)
"""Third-party libraries the entry modules import, imported once before the forks below: none of
them imports the project, so importing them first changes no project import order."""

IMPORT_EACH_FIRST = """
import importlib, os, subprocess, sys, traceback

project = ("replication", "patterns")
for library in sys.argv[2].split(","):
    try:
        importlib.import_module(library)
    except ImportError:
        pass
early = sorted(name for name in sys.modules if name.split(".")[0] in project)
assert not early, f"a library imported the project: {early}"
failed = []
for module in sys.argv[1].split(","):
    if hasattr(os, "fork"):
        child = os.fork()
        if child == 0:
            try:
                importlib.import_module(module)
            except BaseException:
                print(f"--- import {module}", file=sys.stderr)
                traceback.print_exc()
                sys.stderr.flush()
                os._exit(1)
            os._exit(0)
        status = os.waitpid(child, 0)[1]
    else:
        status = subprocess.run([sys.executable, "-c", f"import {module}"]).returncode
    if status:
        failed.append(module)
print(",".join(failed))
"""


def test_each_package_imports_first_in_a_fresh_interpreter() -> None:
    """A cycle through a package's ``__init__`` only shows when that package is imported first.

    Each entry module is imported first by a process of its own: forked from one interpreter
    that imported only third-party libraries (``LIBRARIES_FIRST``), which saves each child the
    half second or more of importing the SDKs again (7.9 s of CPU became 4.5 s).
    """
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            IMPORT_EACH_FIRST,
            ",".join(ENTRY_MODULES),
            ",".join(LIBRARIES_FIRST),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    failed = result.stdout.strip()
    assert not failed, (
        f"these fail as a fresh interpreter's first import: {failed}\n" + (result.stderr[-4000:])
    )


def test_the_local_host_loads_the_optional_libraries_only_where_a_topology_uses_them() -> None:
    """``run`` and the local host import azure-eventhub (an event hub), the Blob Storage SDK
    (a checkpoint store) and rich (the live table on a terminal) only where they are used, so
    a Service Bus topology's host starts without them (issue 26: the CPU spent before the
    first batch). A module-level import of any of them, anywhere on that path, fails here."""
    optional = ("azure.eventhub", "azure.storage.blob", "rich")
    probe = (
        "import sys, replication.cli.run, replication.hosts.local; "
        f"print(sorted(m for m in {optional!r} if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "[]", f"loaded at start-up: {result.stdout.strip()}"


STARTUP_PROBE = """
import sys
from pathlib import Path
import replication.cli.run
from replication.hosts.local import LocalHost
from replication.topology import load_topology

topology = load_topology(Path(%r))
connection = "Endpoint=sb://localhost:1;SharedAccessKeyName=k;SharedAccessKey=v;UseDevelopmentEmulator=true"
LocalHost(topology, {"SB_WEU": connection, "SB_NEU": connection})
print(sorted(m for m in %r if m in sys.modules))
"""
EXAMPLE = ROOT / "examples" / "two-region-all-active.json"


def test_the_local_host_starts_without_what_only_other_topologies_or_commands_need() -> None:
    """Issue 37 (the local host's start-up): loading a Service Bus topology whose only rules are
    the patterns' own and building its host leave out the SQL parser (only a rule written in
    the file needs it), the transforms' registry (only a task with a transform), ``difflib``
    (only a wrong name), ``asyncio`` (only a transform or an asyncio client) and pydantic's
    attribute docstring extraction (only the schema)."""
    unneeded = (
        "replication.sql",
        "replication.transforms._registry",
        "replication.transforms._guard",
        "difflib",
        "asyncio",
    )
    probe = STARTUP_PROBE % (str(EXAMPLE), unneeded)
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "[]", f"loaded at start-up: {result.stdout.strip()}"
    for base in (SpecModel, PatternOptions):  # what the docstrings cost is the schema's only
        assert not base.model_config.get("use_attribute_docstrings")

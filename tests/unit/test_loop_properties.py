"""Property tests: loop prevention holds for any topology of N namespaces.

A small discrete-event simulation delivers messages between namespaces. Each namespace runs the
real pattern ``plan`` (stamping and loop checks included) on every message it receives and
delivers the replicas it decides to forward, so these tests cover patterns, properties and loops
together.
"""

from __future__ import annotations

import itertools
from collections import Counter, deque
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from patterns.all_active import PATTERN as ALL_ACTIVE
from patterns.all_active import AllActiveOptions
from patterns.consolidation import PATTERN as CONSOLIDATION
from patterns.consolidation import ConsolidationOptions
from patterns.latency_optimization import PATTERN as LATENCY_OPTIMIZATION
from patterns.latency_optimization import LatencyOptimizationOptions
from patterns.validation import PATTERN as VALIDATION
from patterns.validation import ValidationOptions
from replication.envelope import Envelope
from replication.loops import should_forward
from replication.planning import Forward, Target, TaskContext
from replication.properties import ALL_PROPERTIES, SEPARATOR, read_state

all_active_plan = ALL_ACTIVE.plan
latency_plan = LATENCY_OPTIMIZATION.plan

Plan = Callable[[Sequence[Envelope], TaskContext, Any], list[Any]]
T0 = datetime(2024, 1, 1, tzinfo=UTC)


def simulate(
    names: list[str],
    peers: dict[str, list[str]],
    plan: Plan,
    options: Any,
    origins: list[str],
    max_hops: int,
) -> tuple[dict[str, Counter[str]], int]:
    """Publish one message per origin and replicate until quiet.

    Returns, per message id, how many times it was enqueued in each namespace, and the number of
    deliveries (to show termination).
    """
    arrivals: dict[str, Counter[str]] = {}
    sequence = itertools.count(1)
    pending: deque[tuple[str, Envelope]] = deque()
    for index, origin in enumerate(origins):
        message_id = f"m{index}"
        arrivals[message_id] = Counter()
        pending.append((origin, Envelope(body=b"x", message_id=message_id)))
    deliveries = 0
    bound = len(origins) * len(names) ** max(1, min(max_hops, len(names)))
    while pending:
        namespace, envelope = pending.popleft()
        deliveries += 1
        assert deliveries <= bound, "replication did not terminate"
        step = next(sequence)
        received = envelope.replace(
            enqueued_time_utc=T0 + timedelta(seconds=step), sequence_number=step
        )
        arrivals[received.message_id or ""][namespace] += 1
        context = TaskContext(
            task_name=f"from-{namespace}",
            source_namespace=namespace,
            targets=tuple(Target(peer, "orders") for peer in peers[namespace]),
            max_hops=max_hops,
        )
        if not context.targets:
            continue
        for decision in plan([received], context, options):
            if isinstance(decision, Forward):
                state = read_state(decision.envelope.application_properties)
                assert len(state.path) == len(set(state.path)), f"cycle in {state.path}"
                assert state.path[-1] == decision.target.namespace
                assert state.hops == len(state.path) - 1 <= max_hops
                pending.append((decision.target.namespace, decision.envelope))
    return arrivals, deliveries


namespace_counts = st.integers(min_value=2, max_value=6)


@st.composite
def flood_topologies(draw: st.DrawFn) -> tuple[list[str], dict[str, list[str]], list[str], int]:
    count = draw(namespace_counts)
    names = [f"ns{i}" for i in range(count)]
    peers = {
        name: draw(st.lists(st.sampled_from([n for n in names if n != name]), unique=True))
        for name in names
    }
    if draw(st.booleans()):
        peers = {name: [n for n in names if n != name] for name in names}
    origins = draw(st.lists(st.sampled_from(names), min_size=1, max_size=4))
    max_hops = draw(st.integers(min_value=1, max_value=12))
    return names, peers, origins, max_hops


@settings(max_examples=150, deadline=None)
@given(flood_topologies())
def test_a_flood_never_cycles_and_terminates(
    case: tuple[list[str], dict[str, list[str]], list[str], int],
) -> None:
    """(a) Every namespace forwards everything it receives to its peers (misconfigured flood).

    ``simulate`` asserts that no copy's path repeats a namespace (no cycle, no return) and that
    the flood ends. A namespace may still get a message twice over two different routes (a
    diamond: A->B->D and A->C->D); those copies share the MessageId, which is what duplicate
    detection on the target entity removes. Their number is bounded by the routes of at most
    ``max_hops`` hops.
    """
    names, peers, origins, max_hops = case
    arrivals, deliveries = simulate(
        names, peers, latency_plan, LatencyOptimizationOptions(), origins, max_hops
    )
    routes = sum(len(list(itertools.permutations(names[1:], hops))) for hops in range(max_hops + 1))
    assert deliveries <= len(origins) * routes
    for per_namespace in arrivals.values():
        assert sum(per_namespace.values()) <= routes


@st.composite
def chains_and_hubs(draw: st.DrawFn) -> tuple[list[str], dict[str, list[str]], list[str]]:
    count = draw(namespace_counts)
    names = [f"ns{i}" for i in range(count)]
    if draw(st.booleans()):
        peers = {
            name: [names[j] for j in (i - 1, i + 1) if 0 <= j < count]
            for i, name in enumerate(names)
        }
    else:
        hub, *spokes = names
        peers = {hub: list(spokes), **{spoke: [hub] for spoke in spokes}}
    origins = draw(st.lists(st.sampled_from(names), min_size=1, max_size=4))
    return names, peers, origins


@settings(max_examples=150, deadline=None)
@given(chains_and_hubs())
def test_b_chain_or_hub_delivers_every_message_everywhere_exactly_once(
    case: tuple[list[str], dict[str, list[str]], list[str]],
) -> None:
    """(b) Latency optimization: transit messages are forwarded onwards along the route."""
    names, peers, origins = case
    arrivals, _ = simulate(
        names,
        peers,
        latency_plan,
        LatencyOptimizationOptions(),
        origins,
        len(names) - 1,
    )
    for per_namespace in arrivals.values():
        assert per_namespace == Counter(dict.fromkeys(names, 1))


@settings(max_examples=100, deadline=None)
@given(
    st.integers(min_value=2, max_value=4).flatmap(
        lambda n: st.tuples(st.just(n), st.lists(st.integers(0, n - 1), min_size=1, max_size=5))
    )
)
def test_c_all_active_full_mesh_delivers_every_message_everywhere_exactly_once(
    case: tuple[int, list[int]],
) -> None:
    """(c) All-active full mesh of 2, 3 and 4 namespaces: originals only are replicated."""
    count, origin_indexes = case
    names = [f"ns{i}" for i in range(count)]
    peers = {name: [n for n in names if n != name] for name in names}
    origins = [names[i] for i in origin_indexes]
    arrivals, _ = simulate(
        names, peers, all_active_plan, AllActiveOptions(), origins, len(names) - 1
    )
    for per_namespace in arrivals.values():
        assert per_namespace == Counter(dict.fromkeys(names, 1))


@given(
    st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=4),
    st.sampled_from(["a", "b", "c", "d", "e"]),
    st.integers(min_value=0, max_value=6),
    st.integers(min_value=1, max_value=6),
)
def test_should_forward_refuses_visited_targets_and_exhausted_hops(
    path: list[str], target: str, hops: int, max_hops: int
) -> None:
    properties: dict[str, Any] = {"repl-hops": hops}
    if path:
        properties["repl-origin"] = path[0]
        properties["repl-path"] = SEPARATOR.join(path)
    envelope = Envelope(body=b"", application_properties=properties)
    expected = target not in path and hops < max_hops
    assert should_forward(envelope, target, max_hops) is expected


reserved_names = st.sampled_from(
    [*ALL_PROPERTIES, "repl-anything", "Repl-Path", "REPL-HOPS", "Replication"]
)


@settings(max_examples=150, deadline=None)
@given(
    flood_topologies(),
    st.lists(reserved_names, min_size=1, max_size=4),
    st.sampled_from(["remove", "set", "rename-from", "rename-to"]),
)
def test_d_options_that_edit_replication_properties_cannot_make_a_flood_cycle(
    case: tuple[list[str], dict[str, list[str]], list[str], int], names: list[str], edit: str
) -> None:
    """(d) A flood whose every task edits the replication properties, with options built
    without validation (which would refuse them): the forwarding step restores them, so
    ``simulate``'s no-cycle and termination assertions hold as in (a)."""
    topology, peers, origins, max_hops = case
    plan: Plan
    options: Any
    if edit in ("remove", "set"):
        plan = VALIDATION.plan
        options = ValidationOptions.model_construct(
            remove_properties=names if edit == "remove" else [],
            set_properties=dict.fromkeys(names, "") if edit == "set" else {},
        )
    else:
        plan = CONSOLIDATION.plan
        renames = {name: f"copy-{i}" for i, name in enumerate(names)}
        if edit == "rename-to":
            renames = {f"other-{i}": name for i, name in enumerate(names)}
        options = ConsolidationOptions.model_construct(set_properties={}, rename_properties=renames)
    simulate(topology, peers, plan, options, origins, max_hops)

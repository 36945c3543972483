"""Failover when a region hangs instead of refusing (issue 36), end state message by message.

A namespace, or the binding store, that accepts connections and answers nothing is made by
freezing its process with SIGSTOP (thawed with SIGCONT): the two Service Bus namespaces of
``examples/active-passive-failover.json`` each run in an emulator process of their own
(:mod:`replication.drill._processes`), Azurite holds the binding store and the consumers' logs.
No replicator runs: a "replica" on the secondary is a copy the test sends there stamped as
replication stamps it, and what is published to the primary stays in its replication
subscription (a backlog that never drains).

Every client and command here gets a 2 s call deadline (:data:`CALL`); the bounds asserted are
"no hang beyond the deadlines plus :data:`MARGIN`", generous for a loaded 2-core machine. Each
test names the finding of the issue it covers; each failed on the code before the fix (run
with the deadline arguments removed, which that code did not have).
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import os
import re
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import pytest
from azure.core.exceptions import ResourceExistsError
from azure.servicebus import ServiceBusClient, ServiceBusMessage
from azure.storage.blob import ContainerClient

from replication.drill._processes import (
    AzuriteProcess,
    NamespaceProcess,
    azurite_process,
    namespace_processes,
)
from replication.exceptions import FailoverStoreError
from replication.exit_codes import ExitCode
from replication.failover import FailoverConsumer, FailoverPublisher, FailoverStore, Role
from replication.failover._bindings import BindingDocument, parse_bindings
from replication.failover._plan import Direction
from replication.failover.switching import switch
from replication.topology import Topology, load_topology
from tests.e2e.test_failover_clients import bind, replicate

from .harness import eventually, failover_consumer
from .proxy import tcp_proxy

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "active-passive-failover.json"
CALL = 2.0
"""The call deadline of every client and command in these tests (the default is 10 s)."""
MARGIN = 10.0
"""What a bound may be exceeded by on a loaded machine before the test calls it a hang."""
NOWHERE = (
    "Endpoint=sb://127.0.0.1:9;SharedAccessKeyName=k;SharedAccessKey=v;UseDevelopmentEmulator=true;"
)

T = TypeVar("T")


class Site:
    """The example's two Service Bus namespaces, each a process of its own, and Azurite."""

    def __init__(
        self, nodes: dict[str, NamespaceProcess], store: AzuriteProcess, topology: Topology
    ) -> None:
        self.nodes = nodes
        self.store = store
        self.storage = store.connection_string
        self.environ = {
            topology.namespace("primary").connection: nodes["primary"].connection_string,
            topology.namespace("secondary").connection: nodes["secondary"].connection_string,
            # The example's Event Hubs namespaces are not served: reads of them are refused.
            topology.namespace("primary-events").connection: NOWHERE,
            topology.namespace("secondary-events").connection: NOWHERE,
            "AzureWebJobsStorage": self.storage,
            "REPLICATION_FAILOVER_STORAGE": self.storage,
        }

    def pair(self) -> dict[str, str]:
        return {name: self.nodes[name].connection_string for name in ("primary", "secondary")}

    def store_for(self, app: str) -> FailoverStore:
        """A binding store of its own for ``app`` (its container, created first with the
        storage SDK's own deadlines), calls bounded by CALL."""
        with (
            ContainerClient.from_connection_string(self.storage, f"hang-{app}") as container,
            contextlib.suppress(ResourceExistsError),
        ):
            container.create_container()
        return FailoverStore.from_connection_string(
            self.storage, f"hang-{app}", timeout=timedelta(seconds=CALL)
        )

    def operator_store(self, app: str) -> FailoverStore:
        """The same container with the default call deadline, for a test's own setup before
        its fault: on a loaded 2-core machine Azurite's first answers can take longer than
        CALL, and that is not what a test here measures."""
        return FailoverStore.from_connection_string(self.storage, f"hang-{app}")


@pytest.fixture(scope="module")
def topology() -> Topology:
    return load_topology(EXAMPLE)


@pytest.fixture(scope="module")
def site(topology: Topology, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    workdir = tmp_path_factory.mktemp("hangs")
    nodes = {
        name: node
        for name, node in namespace_processes(topology, workdir).items()
        if name in ("primary", "secondary")
    }
    with contextlib.ExitStack() as stack:
        for node in nodes.values():
            node.start()
            stack.callback(node.stop)
        store = stack.enter_context(azurite_process(workdir))
        site = Site(nodes, store, topology)
        # Azurite's first answers (a new process on a loaded machine) can take longer than a
        # test's 2 s call deadline: one binding written and read before any test measures.
        with contextlib.closing(site.operator_store("warm-up")) as warm:
            bind(warm, "warm-up", publish="primary", consume="primary")
            document(warm, "warm-up")
        yield site


@pytest.fixture
def app() -> str:
    return f"hang-{uuid.uuid4().hex[:8]}"


@contextlib.contextmanager
def frozen(thing: NamespaceProcess | AzuriteProcess) -> Iterator[None]:
    """``thing`` hangs (SIGSTOP) for the block, and answers again after it, whatever happens."""
    thing.freeze()
    try:
        yield
    finally:
        thing.thaw()


def within(limit: float, call: Callable[[], T], what: str) -> tuple[T, float]:
    """``call()`` in a thread of its own; its result and duration, or AssertionError when it
    is still running after ``limit`` seconds (left to finish when the freeze ends)."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["result"] = call()
        except BaseException as error:
            outcome["error"] = error

    started = time.monotonic()
    thread = threading.Thread(target=run, name=f"bounded {what}", daemon=True)
    thread.start()
    thread.join(limit)
    elapsed = time.monotonic() - started
    if thread.is_alive():
        raise AssertionError(f"{what} still running after {limit:.0f} s: a hang")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"], elapsed


def publish(connection: str, ids: list[str]) -> None:
    with (
        ServiceBusClient.from_connection_string(connection) as client,
        client.get_topic_sender("orders") as sender,
    ):
        sender.send_messages([ServiceBusMessage(b"x", message_id=i) for i in ids])


def billing(connection: str) -> list[str]:
    """The MessageIds in the namespace's ``billing`` subscription, peeked (locked ones too)."""
    with (
        ServiceBusClient.from_connection_string(connection) as client,
        client.get_subscription_receiver("orders", "billing") as receiver,
    ):
        ids: list[str] = []
        while page := receiver.peek_messages(max_message_count=250, sequence_number=0):
            ids += [str(m.message_id) for m in page]
            if len(page) < 250:
                break
        return ids


def clear_billing(site: Site) -> None:
    """Complete whatever a test left in either namespace's ``billing`` subscription."""
    for connection in site.pair().values():
        with (
            ServiceBusClient.from_connection_string(connection) as client,
            client.get_subscription_receiver("orders", "billing") as receiver,
        ):
            while batch := receiver.receive_messages(max_message_count=100, max_wait_time=0.3):
                for message in batch:
                    receiver.complete_message(message)


def document(store: FailoverStore, app: str) -> BindingDocument | None:
    """``app``'s binding document as the test reads it, outside any fault: a read that
    misses the 2 s deadline on a loaded machine is tried again (twice), since the test's own
    look is not what it measures."""
    for attempt in range(3):
        try:
            data, _ = store.read_bindings(app, None)
            break
        except FailoverStoreError:
            if attempt == 2:
                raise
    return parse_bindings(data, source="test") if data else None


def resolved(store: FailoverStore, app: str) -> tuple[str | None, str | None]:
    found = document(store, app)
    if found is None:
        return None, None
    return (
        found.resolve(None, "orders", Role.PUBLISH),
        found.resolve(None, "orders", Role.CONSUME),
    )


def forced(topology: Topology, site: Site, store: FailoverStore, app: str, target: str) -> str:
    """A forced switch of ``app``'s clients of ``orders`` to ``target``; its output."""
    out = io.StringIO()
    code = switch(
        topology, store, site.environ, app=app, instance=None, entity="orders", target=target,
        direction=Direction.FAILOVER if target == "secondary" else Direction.FAILBACK,
        force=True, call_timeout=CALL, out=out,
    )  # fmt: skip
    assert code == ExitCode.OK, out.getvalue()
    return out.getvalue()


# -- finding 1: the emergency tools ------------------------------------------------------------


def test_a_forced_failover_moves_the_clients_first_while_the_primary_hangs(
    topology: Topology, site: Site, app: str, figures: dict[str, object]
) -> None:
    """Finding 1: with the primary frozen, ``failover --force`` used to count the backlog
    first (a peek without deadline) and moved nobody. Now the clients are bound at once, the
    count is "unknown" after one call deadline, and the command ends."""
    store = site.store_for(app)
    out = io.StringIO()
    publish(site.nodes["primary"].connection_string, [f"{app}-backlog"])
    with frozen(site.nodes["primary"]):
        thread = threading.Thread(
            target=lambda: switch(
                topology,
                store,
                site.environ,
                app=app,
                instance=None,
                entity="orders",
                target="secondary",
                direction=Direction.FAILOVER,
                force=True,
                call_timeout=CALL,
                out=out,
            ),
            daemon=True,
        )
        started = time.monotonic()
        thread.start()
        bound = eventually(
            lambda: resolved(store, app) == ("secondary", "secondary"),
            timeout=CALL + MARGIN,
            what="publishers and consumers bound to the secondary",
        )
        thread.join(3 * CALL + MARGIN)
        done = time.monotonic() - started
        assert not thread.is_alive(), f"failover --force still running after {done:.0f} s"
    text = out.getvalue()
    assert "now bound to secondary; counting what primary had not replicated" in text
    assert "RPO unknown" in text, text
    moved = document(store, app)
    assert moved is not None
    assert [(r.kind, r.outcome, r.unreplicated) for r in moved.history] == [
        ("forced", "done", None)
    ]
    figures["forced failover, primary frozen (2 s call deadline)"] = (
        f"clients bound after {bound:.1f} s, command done after {done:.1f} s"
    )
    store.close()


def test_status_reports_a_hung_namespace_within_its_deadline_and_every_binding(
    topology: Topology, site: Site, app: str, figures: dict[str, object]
) -> None:
    """Findings 1 and 8: ``status`` used to print nothing while the primary was frozen, and
    never showed where applications are bound. Now it reports the primary unreachable after
    its deadline (exit 3) and lists each application's binding, a corrupt document by its
    blob."""
    container = f"hang-{app}"
    store = FailoverStore.from_connection_string(site.storage, container)
    bind(store, f"{app}-moved", publish="secondary", consume="secondary")
    with store.switch_lease(f"{app}-broken", holder="test") as lease:
        lease.write(b'{"app": "x", "namespaces": ["primary"], "bindings": [{"publish": 1}]}')
    environ = {
        **os.environ,
        **site.environ,
        "REPLICATION_FAILOVER_CONTAINER": container,
    }
    command = [
        sys.executable, "-m", "replication", "status", "--topology", str(EXAMPLE), "--json",
        "--call-timeout", str(CALL),
    ]  # fmt: skip
    with frozen(site.nodes["primary"]):
        started = time.monotonic()
        result = subprocess.run(
            command, cwd=ROOT, env=environ, capture_output=True, text=True, timeout=120
        )
        took = time.monotonic() - started
    assert result.returncode == ExitCode.UNAVAILABLE, result.stderr
    report = json.loads(result.stdout)
    (task,) = [t for t in report["tasks"] if t["task"] == "orders-to-secondary"]
    assert task["state"] == "unknown"
    assert "no answer" in task["error"] or "has not answered" in task["error"], task["error"]
    bindings = {entry["app"]: entry for entry in report["bindings"]["applications"]}
    moved = bindings[f"{app}-moved"]
    assert [(r["publish"], r["consume"]) for r in moved["rules"]] == [("secondary", "secondary")]
    assert moved["error"] is None
    broken = bindings[f"{app}-broken"]
    assert broken["error"].startswith(f"{container}/bindings/{app}-broken.json: ")
    figures["status with the primary frozen (2 s call deadline)"] = f"{took:.1f} s, exit 3"
    store.close()


# -- finding 2: the consumer loop ------------------------------------------------------------


def test_a_consumer_keeps_returning_while_its_namespace_hangs_and_follows_a_switch(
    site: Site, app: str, figures: dict[str, object]
) -> None:
    """Finding 2: ``receive`` used to block in ``complete_message`` for as long as the primary
    was frozen, so no switch could move the consumer. Now every ``receive`` returns within
    ``max_wait_time`` plus one call deadline, a settlement that got no answer is given up, and
    the consumer follows a switch to the secondary, where it processes the rest and skips what
    it processed: each message once."""
    ids = [f"{app}-{i}" for i in range(8)]
    clear_billing(site)
    publish(site.nodes["primary"].connection_string, ids)
    replicate(site.nodes["secondary"].connection_string, ids)
    store = site.store_for(app)
    consumer = FailoverConsumer.service_bus(
        app=app, entity="orders", subscription="billing", namespaces=site.pair(), store=store,
        poll_interval=timedelta(milliseconds=500), call_timeout=timedelta(seconds=CALL),
    )  # fmt: skip
    processed: list[str] = []
    longest = 0.0

    def receive() -> list[Any]:
        nonlocal longest
        batch, took = within(1 + CALL + MARGIN, lambda: consumer.receive(3, 1), "receive")
        longest = max(longest, took)
        return batch

    def handle(batch: list[Any]) -> None:
        for message in batch:
            if str(message.message_id) in ids:
                processed.append(str(message.message_id))
            consumer.complete(message)  # settled at the next receive

    try:
        deadline = time.monotonic() + 30
        while not processed:
            assert time.monotonic() < deadline, "nothing received from the primary"
            handle(receive())
        on_primary = len(processed)
        with frozen(site.nodes["primary"]):
            frozen_until = time.monotonic() + 2 * CALL + 2
            returned = 0
            while time.monotonic() < frozen_until:
                assert receive() == []
                returned += 1
            assert returned >= 2
            with contextlib.closing(site.operator_store(app)) as operator:
                bind(operator, app, publish="secondary", consume="secondary")
            switched = time.monotonic()
            followed: float | None = None
            while set(processed) != set(ids):
                assert time.monotonic() - switched < 30, processed
                batch = receive()
                if consumer.namespace == "secondary" and followed is None:
                    followed = time.monotonic() - switched
                handle(batch)
            assert followed is not None
            # The promise: within its poll interval plus one read, and the receive in hand.
            assert followed <= 0.5 + CALL + (1 + CALL) + MARGIN
        within(CALL + MARGIN, consumer.checkpoint, "checkpoint")
    finally:
        within(CALL + MARGIN, consumer.close, "close")
    assert Counter(processed) == Counter(ids)  # every message once: none lost, none twice
    assert consumer.counters.skipped == on_primary  # their replicas, skipped by the log
    assert consumer.counters.settle_failures >= 1  # the settlements given up on the primary
    assert longest <= 1 + CALL + MARGIN
    figures["consumer, primary frozen (2 s call deadline, 1 s receives)"] = (
        f"longest receive {longest:.1f} s; followed the switch in {followed:.1f} s"
    )
    store.close()
    clear_billing(site)


# -- finding 3: settled only after the log entry is durable ----------------------------------


def consumer_process(
    site: Site, app: str, log: Path, storage: str | None = None
) -> subprocess.Popen[bytes]:
    return failover_consumer(
        log,
        app=app,
        primary=site.nodes["primary"].connection_string,
        secondary=site.nodes["secondary"].connection_string,
        storage=storage or site.storage,
        call_timeout=CALL,
    )


def _port(connection_string: str) -> int:
    """The port of a storage connection string's ``BlobEndpoint``."""
    match = re.search(r"BlobEndpoint=http://127\.0\.0\.1:(\d+)/", connection_string)
    assert match is not None, connection_string
    return int(match.group(1))


def _through(connection_string: str, port: int) -> str:
    """The connection string with its endpoint's port replaced by ``port`` (a proxy's)."""
    return re.sub(r"127\.0\.0\.1:\d+", f"127.0.0.1:{port}", connection_string)


def lines(log: Path, kind: str) -> list[list[str]]:
    text = log.read_text(encoding="utf-8") if log.exists() else ""
    return [line.split()[1:] for line in text.splitlines() if line.startswith(f"{kind} ")]


def test_a_consumer_settles_nothing_and_takes_no_work_while_its_log_cannot_be_persisted(
    topology: Topology, site: Site, app: str, tmp_path: Path, figures: dict[str, object]
) -> None:
    """Finding 3: with the store unreachable, a consumer used to process and complete
    everything (its log entries never saved), so after a kill and a failover it processed it
    all again. Now it processes one batch, settles nothing and takes no more work while the log
    cannot be written; killed then, only that batch can come back, and nothing is lost. The
    store is cut off by a proxy that refuses connections (what the issue saw)."""
    ids = [f"{app}-{i}" for i in range(15)]
    first_log, second_log = tmp_path / "first.log", tmp_path / "second.log"
    with tcp_proxy(_port(site.storage)) as proxy:
        first = consumer_process(site, app, first_log, _through(site.storage, proxy.port))
        try:
            publish(site.nodes["primary"].connection_string, [f"{app}-warm"])
            eventually(
                lambda: f"{app}-warm" not in billing(site.nodes["primary"].connection_string),
                timeout=60,
                what="the consumer runs (the first message processed, logged and completed)",
            )
            proxy.refuse()
            publish(site.nodes["primary"].connection_string, ids)
            eventually(
                lambda: bool(lines(first_log, "held")),
                timeout=CALL * 3 + MARGIN,
                what="back-pressure",
            )
            time.sleep(2 * CALL)  # more receives, all held back
            before = [m for m, _ in lines(first_log, "processed") if m in ids]
            assert 1 <= len(before) <= 5, before  # one batch (the example receives 5 at most)
            # Nothing was completed: every message is still in the primary's subscription.
            assert set(ids) <= set(billing(site.nodes["primary"].connection_string))
        finally:
            first.kill()  # SIGKILL: what it held in memory is gone
            first.wait()
    replicate(site.nodes["secondary"].connection_string, ids)
    store = FailoverStore.from_connection_string(site.storage)  # the example's container
    forced(topology, site, store, app, "secondary")
    second = consumer_process(site, app, second_log)
    try:
        eventually(
            lambda: {m for m, _ in lines(second_log, "processed")} >= set(ids) - set(before),
            timeout=60,
            what="the restarted consumer processed the rest",
        )
        time.sleep(2)  # a copy processed twice would arrive now
    finally:
        second.kill()
        second.wait()
    after = [m for m, ns in lines(second_log, "processed") if m in ids]
    counts = Counter(before + after)
    assert set(counts) == set(ids)  # none lost
    twice = sorted(m for m, c in counts.items() if c > 1)
    assert set(twice) <= set(before)  # only the batch it could not record comes again
    figures["consumer with the store refused, killed, restarted after a failover"] = (
        f"{len(before)} processed before the kill (one batch), {len(twice)} processed again, "
        "0 lost (before the fix: 15 processed and completed, 15 again)"
    )
    store.close()
    clear_billing(site)


# -- finding 4: a sick store costs the application nothing -----------------------------------


def test_a_hung_store_costs_a_publisher_nothing_and_it_never_sends_to_nowhere(
    site: Site, app: str, figures: dict[str, object]
) -> None:
    """Finding 4: the binding read sat inside ``send``, so a frozen store stopped publishing
    for two storage timeouts per poll. Now reads run in the background: with the store frozen
    the publisher keeps sending, to the namespace it was bound to, at its usual pace."""
    store = site.store_for(app)
    with contextlib.closing(site.operator_store(app)) as operator:
        bind(operator, app, publish="secondary", consume="secondary")
    sent: list[tuple[float, str]] = []
    with FailoverPublisher.service_bus(
        app=app, entity="orders", namespaces=site.pair(), store=store,
        poll_interval=timedelta(milliseconds=300), call_timeout=timedelta(seconds=CALL),
    ) as publisher:  # fmt: skip

        def send(message_id: str) -> str:
            return publisher.send(ServiceBusMessage(b"x", message_id=message_id))

        for n in range(5):
            assert publisher.send(ServiceBusMessage(b"x", message_id=f"{app}-a{n}")) == "secondary"
        with frozen(site.store):
            until = time.monotonic() + 3 * CALL
            while time.monotonic() < until:
                where, _ = within(CALL + MARGIN, partial(send, f"{app}-b{len(sent)}"), "send")
                sent.append((time.monotonic(), where))
            assert publisher.follower.problem is not None  # the store did not answer
        eventually(
            lambda: publisher.follower.problem is None, timeout=CALL + MARGIN, what="store back"
        )
    assert {where for _, where in sent} == {"secondary"}  # never to nowhere, never elsewhere
    times = [at for at, _ in sent]
    gap = max(b - a for a, b in itertools.pairwise(times))
    assert gap < 2.0, f"a send waited {gap:.1f} s on the frozen store"
    figures["publisher with the store frozen"] = (
        f"{len(sent)} sends in {3 * CALL:.0f} s, longest gap {1000 * gap:.0f} ms"
    )
    store.close()
    clear_billing(site)


# -- finding 5: copies within a batch ------------------------------------------------------------


def test_copies_of_one_message_in_a_batch_or_the_next_are_processed_once(
    site: Site, app: str
) -> None:
    """Finding 5: the skip helper checked each message only against its log, filled at
    ``complete``, so a publisher's two attempts of one message (two sequence numbers) in one
    batch were both processed. Now a copy of a message handed out and not settled is
    completed with it (and counted skipped): in the same batch and in the next."""
    primary = site.nodes["primary"].connection_string
    clear_billing(site)
    publish(primary, [f"{app}-a", f"{app}-a", f"{app}-b"])
    consumer = FailoverConsumer.service_bus(
        app=app, entity="orders", subscription="billing", namespaces=site.pair(),
        call_timeout=timedelta(seconds=CALL),
    )  # fmt: skip
    with consumer:
        handed: list[Any] = []
        deadline = time.monotonic() + 30
        while len(handed) < 2 and time.monotonic() < deadline:
            handed += consumer.receive(max_message_count=50, max_wait_time=1)
        assert sorted(str(m.message_id) for m in handed) == [f"{app}-a", f"{app}-b"]
        publish(primary, [f"{app}-b"])  # another copy of b while b is being processed
        deadline = time.monotonic() + 10
        while consumer.counters.skipped < 2 and time.monotonic() < deadline:
            assert consumer.receive(max_message_count=50, max_wait_time=1) == []
        assert consumer.counters.skipped == 2
        for message in handed:
            consumer.complete(message)
        consumer.checkpoint()
    left = [m for m in billing(primary) if m.startswith(app)]
    assert left == []  # every copy completed with its original


# -- finding 6: the publisher's window --------------------------------------------------------


@pytest.mark.parametrize("silence", ["frozen", "blackholed"])
def test_a_publisher_leaves_a_hung_namespace_within_its_window_plus_one_call(
    site: Site, app: str, silence: str, figures: dict[str, object]
) -> None:
    """Finding 6: the unavailability window used to start when the first call *failed* (10 s
    into the hang), so a 3 s window took about 20 s. Now it counts from the start of the first
    failed attempt: the publisher sends elsewhere within the window plus one call deadline.
    The primary is frozen (SIGSTOP), or cut off by a proxy that forwards nothing."""
    window = 1.0
    primary = site.nodes["primary"]
    with contextlib.ExitStack() as stack:
        pair = site.pair()
        if silence == "blackholed":
            proxy = stack.enter_context(tcp_proxy(_port_of(pair["primary"])))
            pair["primary"] = re.sub(r":\d+;", f":{proxy.port};", pair["primary"], count=1)
        publisher = stack.enter_context(
            FailoverPublisher.service_bus(
                app=app, entity="orders", namespaces=pair,
                unavailability_window=timedelta(seconds=window),
                call_timeout=timedelta(seconds=CALL),
            )
        )  # fmt: skip
        assert publisher.send(ServiceBusMessage(b"x", message_id=f"{app}-before")) == "primary"
        if silence == "blackholed":
            proxy.blackhole()
        else:
            stack.enter_context(frozen(primary))
        where, took = within(
            window + CALL + MARGIN,
            lambda: publisher.send(ServiceBusMessage(b"x", message_id=f"{app}-moved")),
            "send",
        )
        assert where == "secondary"
        assert publisher.counters.own_switches == 1
    assert took <= window + CALL + MARGIN
    figures[f"publisher leaves a {silence} primary (window 1 s, call deadline 2 s)"] = (
        f"{took:.1f} s"
    )
    clear_billing(site)


def _port_of(connection_string: str) -> int:
    match = re.search(r"Endpoint=sb://[^:;]+:(\d+);", connection_string)
    assert match is not None, connection_string
    return int(match.group(1))


# -- finding 7: a switch that gives up restores what it found --------------------------------


class Killed(BaseException):
    """The switch command dies here (as if killed after its first write)."""


def planned(
    topology: Topology, site: Site, store: FailoverStore, app: str, target: str, **options: Any
) -> tuple[int, str]:
    out = io.StringIO()
    code = switch(
        topology, store, site.environ, app=app, instance=None, entity="orders", target=target,
        direction=Direction.FAILOVER if target == "secondary" else Direction.FAILBACK,
        settle=0.2, call_timeout=CALL, out=out, **options,
    )  # fmt: skip
    return code, out.getvalue()


def test_a_switch_that_gives_up_after_a_take_over_restores_the_binding_it_found(
    topology: Topology, site: Site, app: str
) -> None:
    """Finding 7, first case: a planned failover died after moving the publishers; the next
    one took over, timed out and "moved the publishers back" to where the dead one had put
    them, leaving ``publish=secondary, consume=primary``. Now it restores the rule the first
    switch found: everybody on the primary."""
    store = site.store_for(app)
    publish(site.nodes["primary"].connection_string, [f"{app}-stuck"])  # never replicated

    def die(_seconds: float) -> None:
        raise Killed

    with pytest.raises(Killed):
        planned(topology, site, store, app, "secondary", sleep=die)
    assert resolved(store, app) == ("secondary", "primary")  # what the dead switch left
    code, text = planned(topology, site, store, app, "secondary", timeout=1.0)
    assert code == ExitCode.UNAVAILABLE, text
    assert "taking over switch" in text
    assert resolved(store, app) == ("primary", "primary"), text
    final = document(store, app)
    assert final is not None
    assert final.switch is None
    assert final.history[-1].outcome == "timed out"
    store.close()


def test_a_failback_that_gives_up_never_binds_anyone_to_a_namespace_that_does_not_answer(
    topology: Topology, site: Site, app: str
) -> None:
    """Finding 7, second case: a failback timed out after the secondary died and bound the
    publishers back onto it. Now the publishers stay on the primary the switch moved them to,
    the consumers where they were, and the command says why."""
    store = site.store_for(app)
    with contextlib.closing(site.operator_store(app)) as operator:
        forced(topology, site, operator, app, "secondary")
    publish(site.nodes["secondary"].connection_string, [f"{app}-direct"])  # must drain first
    with frozen(site.nodes["secondary"]):
        code, text = within(
            60 + MARGIN,
            lambda: planned(topology, site, store, app, "primary", timeout=3.0),
            "failback",
        )[0]
    assert code == ExitCode.UNAVAILABLE, text
    assert resolved(store, app) == ("primary", "secondary"), text
    assert "publishers stay on primary (secondary did not answer" in text, text
    store.close()
    clear_billing(site)


# -- finding 8: exit code 3 for an unreachable store ------------------------------------------


def test_a_switch_whose_store_hangs_exits_3_within_its_deadline(site: Site, app: str) -> None:
    """Finding 8: a store that cannot be reached ended the command with exit 2
    ("configuration"); the exit codes reserve 3 for "could not be reached". It also waited the
    storage SDK's long timeouts; now the call deadline bounds it."""
    command = [
        sys.executable, "-m", "replication", "failover", "--topology", str(EXAMPLE), "--app",
        app, "--entity", "orders", "--to", "secondary", "--force", "--call-timeout", str(CALL),
    ]  # fmt: skip
    with frozen(site.store):
        started = time.monotonic()
        result = subprocess.run(
            command,
            cwd=ROOT,
            env={**os.environ, **site.environ},
            capture_output=True,
            text=True,
            timeout=120,
        )
        took = time.monotonic() - started
    assert result.returncode == ExitCode.UNAVAILABLE, result.stderr
    assert result.stderr.strip().startswith("error: "), result.stderr
    assert took < 4 * CALL + MARGIN

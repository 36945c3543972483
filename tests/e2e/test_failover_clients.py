"""The failover publishers and consumers over the wire: real SDKs against the emulator, the
binding store and the processed-message log in Azurite.

The namespaces are those of ``examples/active-passive-failover.json``, served by one in-process
emulator; no replicator runs here, so a "replica" is a copy the test sends to the secondary with
the replication properties replication would stamp (``replication.properties.stamp``). The
binding documents are written the way ``python -m replication failover`` writes them, under the
blob lease.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from azure.servicebus import ServiceBusClient, ServiceBusMessage

pytest.importorskip("proton", reason="the emulator needs python-qpid-proton")

import emulator
from replication.envelope import Envelope
from replication.failover import (
    AsyncFailoverConsumer,
    AsyncFailoverPublisher,
    FailoverConsumer,
    FailoverPublisher,
    FailoverStore,
)
from replication.failover._bindings import BindingDocument, new_document, render_bindings
from replication.properties import stamp
from replication.render.emulator_config import emulator_config
from replication.topology import load_topology
from replication.transport.servicebus import to_servicebus_message
from tests.faults.harness import eventually

pytestmark = pytest.mark.emulator

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "active-passive-failover.json"
POLL = timedelta(milliseconds=300)


@pytest.fixture(scope="module")
def namespaces() -> Iterator[dict[str, str]]:
    topology = load_topology(EXAMPLE)
    with emulator.run_emulator(emulator_config(topology)) as running:
        yield {
            name: running.connection_string(name)
            for name in ("primary", "secondary", "primary-events", "secondary-events")
        }


@pytest.fixture
def store(azurite: str) -> Iterator[FailoverStore]:
    store = FailoverStore.from_connection_string(azurite, f"failover-{uuid.uuid4().hex[:8]}")
    yield store
    store.close()


@pytest.fixture
def app() -> str:
    return f"app-{uuid.uuid4().hex[:8]}"


def bind(
    store: FailoverStore, app: str, *, pair: list[str] | None = None, **roles: str
) -> BindingDocument:
    """Bind every client of ``app`` (``publish=``, ``consume=``), as the command does."""
    names = pair or ["primary", "secondary"]
    with store.switch_lease(app, holder="test") as lease:
        data = lease.read()
        document = (
            BindingDocument.model_validate_json(data)
            if data
            else new_document(app, names, names[0])
        )
        document = document.bound(instance=None, entity=None, default=names[0], **roles)
        lease.write(render_bindings(document))
        return document


def drain(connection: str, subscription: str = "billing") -> list[str]:
    with (
        ServiceBusClient.from_connection_string(connection) as client,
        client.get_subscription_receiver("orders", subscription) as receiver,
    ):
        ids = []
        while batch := receiver.receive_messages(max_message_count=100, max_wait_time=1):
            for message in batch:
                ids.append(str(message.message_id))
                receiver.complete_message(message)
        return ids


def replicate(connection: str, ids: list[str], source: str = "primary") -> None:
    """Put replicas of ``ids`` on ``connection``'s orders topic, as replication would."""
    with (
        ServiceBusClient.from_connection_string(connection) as client,
        client.get_topic_sender("orders") as sender,
    ):
        now = datetime.now(UTC)
        replicas = [
            to_servicebus_message(
                stamp(
                    Envelope(
                        body=b"x",
                        message_id=message_id,
                        enqueued_time_utc=now + timedelta(milliseconds=index),
                        sequence_number=index,
                    ),
                    source_namespace=source,
                    target_namespace="secondary",
                )
            )
            for index, message_id in enumerate(ids)
        ]
        sender.send_messages(replicas)


def test_a_publisher_without_store_sends_to_its_first_namespace_and_names_every_message(
    namespaces: dict[str, str], app: str
) -> None:
    with FailoverPublisher.service_bus(
        app=app, entity="orders", namespaces={n: namespaces[n] for n in ("primary", "secondary")}
    ) as publisher:
        messages = [ServiceBusMessage(b"a"), ServiceBusMessage(b"b", message_id="given")]
        assert publisher.send(messages) == "primary"
    assert messages[0].message_id
    assert messages[1].message_id == "given"
    assert sorted(drain(namespaces["primary"])) == sorted(str(m.message_id) for m in messages)
    assert drain(namespaces["secondary"]) == []


def test_a_publisher_follows_the_binding_store_within_its_poll_interval(
    namespaces: dict[str, str], store: FailoverStore, app: str, figures: dict[str, object]
) -> None:
    with FailoverPublisher.service_bus(
        app=app,
        entity="orders",
        namespaces={n: namespaces[n] for n in ("primary", "secondary")},
        store=store,
        poll_interval=POLL,
    ) as publisher:
        assert publisher.send(ServiceBusMessage(b"before", message_id="before")) == "primary"
        bind(store, app, publish="secondary")
        switched = time.monotonic()
        while publisher.send(ServiceBusMessage(b"during")) == "primary":
            assert time.monotonic() - switched < 30, "the publisher never followed"
        followed = time.monotonic() - switched
        # The promise: within the poll interval plus one read (at most the store's deadline),
        # with a margin for a loaded machine.
        assert followed <= POLL.total_seconds() + store.timeout + 5
        figures["publisher follows a switch within (poll 0.3 s)"] = f"{followed:.2f} s"
        assert publisher.counters.followed_switches == 1
    assert "before" in drain(namespaces["primary"])
    assert drain(namespaces["secondary"])


def test_a_publisher_moves_on_its_own_after_the_unavailability_window(
    namespaces: dict[str, str], app: str, caplog: pytest.LogCaptureFixture
) -> None:
    dead = "Endpoint=sb://127.0.0.1:9;SharedAccessKeyName=k;SharedAccessKey=v;UseDevelopmentEmulator=true;"
    caplog.set_level(logging.WARNING, logger="replication.failover")
    with FailoverPublisher.service_bus(
        app=app,
        entity="orders",
        namespaces={"primary": dead, "secondary": namespaces["secondary"]},
        unavailability_window=timedelta(seconds=1),
    ) as publisher:
        started = time.monotonic()
        assert publisher.send(ServiceBusMessage(b"x", message_id="moved")) == "secondary"
        assert time.monotonic() - started < 15
        assert publisher.counters.own_switches == 1
    assert any("failing for" in record.getMessage() for record in caplog.records)
    assert drain(namespaces["secondary"]) == ["moved"]


def test_a_consumer_skips_on_the_secondary_what_it_processed_on_the_primary(
    namespaces: dict[str, str], store: FailoverStore, app: str, figures: dict[str, object]
) -> None:
    ids = [f"m-{i}" for i in range(6)]
    with FailoverPublisher.service_bus(
        app=app, entity="orders", namespaces={"primary": namespaces["primary"]}
    ) as publisher:
        publisher.send([ServiceBusMessage(b"x", message_id=i) for i in ids])
    replicate(namespaces["secondary"], ids)
    pair = {n: namespaces[n] for n in ("primary", "secondary")}
    consumer = FailoverConsumer.service_bus(
        app=app,
        entity="orders",
        subscription="billing",
        namespaces=pair,
        store=store,
        poll_interval=POLL,
    )
    processed: list[str] = []
    with consumer:
        while len(processed) < 4:
            for message in consumer.receive(max_message_count=1, max_wait_time=1):
                processed.append(str(message.message_id))
                consumer.complete(message)
        consumer.checkpoint()
        bind(store, app, publish="secondary", consume="secondary")
        switched = time.monotonic()
        deadline = switched + 15
        followed: float | None = None
        on_secondary = 0
        while consumer.namespace != "secondary" or len(processed) < 6:
            assert time.monotonic() < deadline, processed
            for message in consumer.receive(max_wait_time=1):
                processed.append(str(message.message_id))
                on_secondary += consumer.namespace == "secondary"
                consumer.complete(message)
            if followed is None and consumer.namespace == "secondary":
                followed = time.monotonic() - switched
        figures["consumer follows a switch within (poll 0.3 s, receives of 1 s)"] = (
            f"{followed:.2f} s"
        )
        assert sorted(processed) == sorted(ids)  # each once, on one namespace or the other
        assert consumer.counters.skipped == len(ids) - on_secondary  # the replicas it had seen
        assert consumer.counters.unverified == 0
    # A consumer started afresh reads the persisted log: the same replicas are skipped again,
    # each shown to ``on_skip`` before it is completed.
    replicate(namespaces["secondary"], ids[:3])
    shown: list[str] = []
    with FailoverConsumer.service_bus(
        app=app,
        entity="orders",
        subscription="billing",
        namespaces=pair,
        store=store,
        on_skip=lambda message: shown.append(str(message.message_id)),
    ) as restarted:
        assert len(restarted.log) == 6
        assert restarted.receive(max_wait_time=1) == []
        assert restarted.counters.skipped == 3
    assert sorted(shown) == ids[:3]


def test_a_corrupt_or_unreachable_store_leaves_clients_where_they_were(
    namespaces: dict[str, str], store: FailoverStore, app: str, caplog: pytest.LogCaptureFixture
) -> None:
    pair = {n: namespaces[n] for n in ("primary", "secondary")}
    bind(store, app, publish="secondary", consume="secondary")
    caplog.set_level(logging.WARNING, logger="replication.failover")
    with FailoverPublisher.service_bus(
        app=app, entity="orders", namespaces=pair, store=store, poll_interval=POLL
    ) as publisher:
        assert publisher.send(ServiceBusMessage(b"1")) == "secondary"
        with store.switch_lease(app, holder="test") as lease:
            lease.write(b'{"app": "x", "namespaces": ["primary"], "bindings": [{"publish": 1}]')
        # The follower reads the store in the background, every POLL: on a loaded machine its
        # next read can come later than one interval after the write.
        eventually(
            lambda: publisher.follower.problem is not None,
            timeout=30,
            what="the follower read the corrupt document",
        )
        assert publisher.send(ServiceBusMessage(b"2")) == "secondary"
        problem = publisher.follower.problem
        assert problem is not None
        assert "binding document not usable" in problem
    unreachable = FailoverStore.from_connection_string(
        "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=a2V5;"
        "BlobEndpoint=http://127.0.0.1:9/devstoreaccount1;"
    )
    with FailoverPublisher.service_bus(
        app=app, entity="orders", namespaces=pair, store=unreachable
    ) as publisher:
        assert publisher.send(ServiceBusMessage(b"3")) == "primary"
        problem = publisher.follower.problem
        assert problem is not None
        assert "unreachable" in problem
    assert any("staying on" in record.getMessage() for record in caplog.records)
    drain(namespaces["primary"])
    drain(namespaces["secondary"])


def test_the_asyncio_clients(namespaces: dict[str, str], store: FailoverStore, app: str) -> None:
    pair = {n: namespaces[n] for n in ("primary", "secondary")}

    async def scenario() -> tuple[list[str], int]:
        async with AsyncFailoverPublisher.service_bus(
            app=app, entity="orders", namespaces=pair, store=store
        ) as publisher:
            assert (
                await publisher.send(
                    [ServiceBusMessage(b"x", message_id=f"a-{i}") for i in range(3)]
                )
                == "primary"
            )
        received: list[str] = []
        async with AsyncFailoverConsumer.service_bus(
            app=app, entity="orders", subscription="billing", namespaces=pair, store=store
        ) as consumer:
            while len(received) < 3:
                for message in await consumer.receive(max_wait_time=1):
                    received.append(str(message.message_id))
                    await consumer.complete(message)
        replicate(namespaces["secondary"], received)
        bind(store, app, consume="secondary")
        async with AsyncFailoverConsumer.service_bus(
            app=app, entity="orders", subscription="billing", namespaces=pair, store=store
        ) as consumer:
            assert await consumer.receive(max_wait_time=1) == []
            return received, consumer.counters.skipped

    received, skipped = asyncio.run(scenario())
    assert sorted(received) == ["a-0", "a-1", "a-2"]
    assert skipped == 3

"""The capture writer on Azure Blob Storage (Azurite, the real storage SDK): one blob per hour
and batch under ``{region}/yyyy/MM/dd/HH/``, in the audit's JSON-lines format, and the same
batch written again rewrites the same blobs instead of adding copies."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from azure.storage.blob import ContainerClient

from replication.capture import CaptureWriter
from replication.envelope import Envelope
from replication.transport.capture import BlobCaptureStore

pytestmark = pytest.mark.emulator

T0 = datetime(2024, 5, 1, 11, 59, 58, tzinfo=UTC)


def test_a_batch_lands_as_hourly_blobs_and_a_retry_rewrites_them(azurite: str) -> None:
    batch = [
        Envelope(
            message_id=f"m{n}",
            enqueued_time_utc=T0 + timedelta(seconds=n),
            sequence_number=n,
            application_properties={"n": str(n)},
        )
        for n in range(4)
    ]
    store = BlobCaptureStore.from_connection_string(azurite, "captures")
    writer = CaptureWriter(store, "weu")
    written = writer.write(batch)
    assert writer.write(batch) == written  # redelivered: the same names, rewritten
    store.close()
    with ContainerClient.from_connection_string(azurite, "captures") as container:
        blobs = sorted(blob.name for blob in container.list_blobs())
        assert blobs == sorted(written)
        assert [name.rsplit("/", 1)[0] for name in blobs] == [
            "weu/2024/05/01/11",
            "weu/2024/05/01/12",
        ]
        records = [
            json.loads(line)
            for name in blobs
            for line in container.download_blob(name).readall().decode().splitlines()
        ]
    assert [(r["message_id"], r["sequence_number"]) for r in records] == [
        ("m0", 0), ("m1", 1), ("m2", 2), ("m3", 3),
    ]  # fmt: skip
    assert records[2]["enqueued_time_utc"] == "2024-05-01T12:00:00.000Z"

"""The capture writer on Azure Blob Storage (Azurite, the real storage SDK): one blob per hour
and batch under ``{region}/yyyy/MM/dd/HH/``, in the audit's JSON-lines format, and the same
batch written again rewrites the same blobs instead of adding copies."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from azure.storage.blob import ContainerClient, ContainerSasPermissions, generate_container_sas

from replication.capture import CaptureWriter, FolderStore
from replication.envelope import Envelope
from replication.exceptions import ConfigurationError
from replication.settings import CAPTURE_STORAGE_SETTING, Connection
from replication.topology import CaptureSpec
from replication.transport.capture import BlobCaptureStore, capture_store

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


def test_the_capture_setting_picks_azurite_a_folder_or_the_accounts_own_endpoint(
    azurite: str, tmp_path: Path
) -> None:
    """``REPLICATION_CAPTURE_STORAGE``: a connection string writes to that storage (here
    Azurite), a value without ``=`` to a folder, nothing to the capture section's own account
    with the app's identity; a value that is neither is a one-line configuration error."""
    spec = CaptureSpec(storage_account="stcaptures", container="audit")
    batch = [Envelope(message_id="m", enqueued_time_utc=T0, sequence_number=1)]

    def connection(value: str | None) -> Connection:
        return Connection.read(
            CAPTURE_STORAGE_SETTING, {CAPTURE_STORAGE_SETTING: value} if value else {}
        )

    blob = capture_store(spec, connection(azurite))
    (path,) = CaptureWriter(blob, "weu").write(batch)
    with ContainerClient.from_connection_string(azurite, "audit") as container:
        assert [b.name for b in container.list_blobs()] == [path]
    folder = capture_store(spec, connection(str(tmp_path)))
    assert isinstance(folder, FolderStore)
    (path,) = CaptureWriter(folder, "weu").write(batch)
    assert (tmp_path / "audit" / path).is_file()
    own = capture_store(spec, connection(None))
    assert isinstance(own, BlobCaptureStore)
    assert own.url == "https://stcaptures.blob.core.windows.net/audit"
    with pytest.raises(ConfigurationError, match=CAPTURE_STORAGE_SETTING):
        capture_store(spec, connection("AccountName=x;NotAKey"))


def test_a_writer_allowed_only_into_the_container_writes_into_the_existing_one(
    azurite: str,
) -> None:
    """As with the role the provisioning grants (Storage Blob Data Contributor on the container
    alone): creating the container is refused (403), which the store takes for "it exists",
    and the blobs go in. Azurite stands in for the role with a container SAS that may write
    blobs and nothing else."""
    with ContainerClient.from_connection_string(azurite, "scoped") as owner:
        owner.create_container()
        key = owner.credential.account_key
        sas = generate_container_sas(
            owner.account_name,
            "scoped",
            account_key=key,
            permission=ContainerSasPermissions(write=True, create=True),
            expiry=datetime.now(UTC) + timedelta(hours=1),
        )
        scoped = BlobCaptureStore(
            ContainerClient(owner.url.rsplit("/", 1)[0], "scoped", credential=sas)
        )
        (path,) = CaptureWriter(scoped, "weu").write(
            [Envelope(message_id="m", enqueued_time_utc=T0, sequence_number=1)]
        )
        scoped.close()
        assert [blob.name for blob in owner.list_blobs()] == [path]

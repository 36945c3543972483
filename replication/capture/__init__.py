"""Service Bus capture: what a region's topic held, written where the duplicate audit reads it.

Service Bus has no capture feature (Event Hubs has Capture, which writes Avro the audit reads
as ``--format capture``). This package is the storage half of a Service Bus capture: a batch
received from a capture subscription (one that takes everything the topic holds) is written in
the audit's JSON-lines record format (``--format json``, spark/README.md "Input"), one file per
hour of enqueue time and batch, under ``{region}/{yyyy}/{MM}/{dd}/{HH}/{batch}.jsonl``, the
time-partitioned layout the audit's ``--since`` / ``--until`` select by. :meth:`CaptureWriter.write`
returns only once every file of the batch is durable, so a caller that settles the batch after
it returns loses nothing: a failed or interrupted write leaves the batch unsettled and it is
delivered again.

**Retries write no second copy of the same batch.** A file's name is a digest of the copies it
holds (MessageId, sequence number, enqueue time), so a batch delivered again with the same
messages rewrites the same files with the same bytes. Service Bus may regroup a redelivered
batch, though (other messages join it, or it arrives split): then a message can be in two files.
The audit tells such a capture repeat from a replication duplicate: both copies have the same
sequence number and enqueue time in the same region, where a replica sent twice is enqueued
twice, with two sequence numbers. The report counts repeats as ``capture_repeats``, not among
the ``unexpected_duplicates`` (``duplicates/`` lists them as ``capture_repeat`` rows).

Stores: :class:`FolderStore` (a local or mounted folder: write to a temporary file, fsync,
rename) and ``replication.transport.capture.BlobCaptureStore`` (Azure Blob Storage or Azurite:
one Put Blob per file, committed whole or not at all).

The capture as a task: a Service Bus namespace's ``capture`` section in the topology
(:class:`~replication.topology.CaptureSpec`) gives each of its topics the subscription
``replication-capture`` and a capture task (:func:`~replication.topology.capture_sources`),
which the Function app (a topic trigger per capture) and the local host (a receive loop per
capture) run through :class:`CaptureRunner`: a batch is completed only after it is written,
and a failed write (:class:`~replication.exceptions.CaptureWriteError`) leaves the whole batch
to come back.
"""

from __future__ import annotations

from ._format import batch_name, capture_line, capture_record, partition_path
from ._runner import CaptureRunner
from ._writer import CaptureStore, CaptureWriter, FolderStore

__all__ = [
    "CaptureRunner",
    "CaptureStore",
    "CaptureWriter",
    "FolderStore",
    "batch_name",
    "capture_line",
    "capture_record",
    "partition_path",
]

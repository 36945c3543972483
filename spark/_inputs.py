"""Read what each region captured into normalized records (see ``_schema.RECORD_SCHEMA``).

Formats:

- ``json`` / ``parquet``: records with ``message_id``, ``enqueued_time_utc`` (ISO-8601),
  ``properties`` (map of strings), optional ``body`` and ``sequence_number``.
- ``capture``: Event Hubs Capture Avro files (``SequenceNumber``, ``Offset``,
  ``EnqueuedTimeUtc`` like ``11/16/2016 4:44:11 PM``, ``SystemProperties``, ``Properties``,
  ``Body``). PySpark from PyPI has no ``avro`` alias; the Avro reader class
  ``org.apache.spark.sql.avro.AvroFileFormat`` is used where the runtime has it, otherwise
  files are decoded with fastavro on the executors (``binaryFile`` + ``mapInPandas``), never on
  the driver. The message id is the ``message-id`` system property, else the ``MessageId``
  user property, else ``Offset@region``.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from replication.properties import REPL_ORIGIN_MESSAGE_ID
from replication.values import as_text

from ._schema import (
    ENQUEUED,
    INPUT_SCHEMA,
    MESSAGE_ID,
    PROPERTIES,
    RECORD_COLUMNS,
    RECORD_SCHEMA,
    REGION,
    SEQUENCE,
)
from ._storage import Files, StorageError, one_line
from ._window import Selection, SelectionError, Window, select_files

logger = logging.getLogger(__name__)

AVRO_FORMAT = "org.apache.spark.sql.avro.AvroFileFormat"
CAPTURE_TIME_FORMAT = "M/d/yyyy h:mm:ss a"
_CAPTURE_ROWS = T.StructType(
    [
        T.StructField("SequenceNumber", T.LongType()),
        T.StructField("Offset", T.StringType()),
        T.StructField("EnqueuedTimeUtc", T.StringType()),
        T.StructField("MessageIdSystem", T.StringType()),
        T.StructField("Properties", T.MapType(T.StringType(), T.StringType())),
    ]
)


class InputError(ValueError):
    """An input cannot be read, named with its region; one line."""


def read_region(spark: SparkSession, region: str, files: list[str], fmt: str) -> DataFrame:
    """Normalized records of one region from its capture ``files`` (URIs; none: no records)."""
    if not files:
        return spark.createDataFrame([], RECORD_SCHEMA)
    try:
        if fmt == "json":
            frame = spark.read.schema(INPUT_SCHEMA).json(files)
        elif fmt == "parquet":
            frame = spark.read.parquet(*files)
        elif fmt == "capture":
            return _read_capture(spark, region, files)
        else:
            raise InputError(f"unknown format {fmt!r} (json, parquet or capture)")
        return normalize(frame, region)
    except InputError:
        raise
    except Exception as error:  # AnalysisException, or the Connect server's equivalent
        raise InputError(f"region {region}: cannot read its captures: {one_line(error)}") from None


def normalize(frame: DataFrame, region: str) -> DataFrame:
    """Select and type the audited columns of a json/parquet frame, tagged with ``region``.

    A value that does not convert (a time that is not a timestamp) becomes null, so the record
    is counted as invalid instead of failing the whole audit.
    """
    columns = set(frame.columns)
    missing = {MESSAGE_ID, ENQUEUED} - columns
    if missing:
        raise InputError(f"region {region}: input lacks column(s) {', '.join(sorted(missing))}")
    properties: Column = (
        F.col(PROPERTIES).cast("map<string,string>")
        if PROPERTIES in columns
        else F.create_map().cast("map<string,string>")
    )
    sequence = F.col(SEQUENCE).try_cast("long") if SEQUENCE in columns else F.lit(None).cast("long")
    return frame.select(
        F.lit(region).alias(REGION),
        F.col(MESSAGE_ID).cast("string").alias(MESSAGE_ID),
        F.col(ENQUEUED).try_cast("timestamp").alias(ENQUEUED),
        properties.alias(PROPERTIES),
        sequence.alias(SEQUENCE),
    )


def read_inputs(spark: SparkSession, files: dict[str, list[str]], fmt: str) -> DataFrame:
    """All regions' records in one frame, from each region's capture files."""
    frames = [read_region(spark, region, paths, fmt) for region, paths in files.items()]
    union = frames[0]
    for frame in frames[1:]:
        union = union.unionByName(frame)
    return union.withColumn(MESSAGE_ID, original_message_id()).select(*RECORD_COLUMNS)


def original_message_id() -> Column:
    """The id a copy is audited by: a replica a user transform gave a MessageId of its own
    carries its original's id in ``repl-origin-message-id`` and counts as a copy of that
    message."""
    return F.coalesce(F.col(PROPERTIES)[REPL_ORIGIN_MESSAGE_ID], F.col(MESSAGE_ID))


# ---------------------------------------------------------------- Event Hubs Capture (Avro)


def _union_to_string(value: Column) -> Column:
    """Capture maps hold Avro unions (long/double/string/bytes); Spark reads them as structs."""
    return value.cast("string")


def _read_capture(spark: SparkSession, region: str, files: list[str]) -> DataFrame:
    try:
        raw = spark.read.format(AVRO_FORMAT).load(files)
        frame = _capture_from_avro_reader(raw)
        logger.info("region %s: reading Capture files with %s", region, AVRO_FORMAT)
    except Exception as error:
        if "PATH_NOT_FOUND" in str(error):
            raise InputError(
                f"region {region}: cannot read its captures: {one_line(error)}"
            ) from None
        logger.info(
            "region %s: Avro reader unavailable (%s); decoding with fastavro",
            region,
            type(error).__name__,
        )
        frame = _capture_with_fastavro(spark, files)
    message_id = F.coalesce(
        F.col("MessageIdSystem"),
        F.col("Properties").getItem("MessageId"),
        F.concat(F.col("Offset"), F.lit(f"@{region}")),
    )
    return frame.select(
        F.lit(region).alias(REGION),
        message_id.alias(MESSAGE_ID),
        F.to_timestamp(F.col("EnqueuedTimeUtc"), CAPTURE_TIME_FORMAT).alias(ENQUEUED),
        F.col("Properties").alias(PROPERTIES),
        F.col("SequenceNumber").alias(SEQUENCE),
    )


def _string_map(column: str) -> Column:
    return F.transform_values(F.col(column), lambda _, value: _struct_union_to_string(value))


def _struct_union_to_string(value: Column) -> Column:
    # Spark reads a multi-type Avro union as struct<member0, member1, ...>; take the one set.
    return F.coalesce(*[value.getField(f"member{i}").cast("string") for i in range(4)])


def _capture_from_avro_reader(raw: DataFrame) -> DataFrame:
    fields = {f.name: f.dataType for f in raw.schema.fields}
    system, user = fields["SystemProperties"], fields["Properties"]
    system_map = (
        _string_map("SystemProperties")
        if _is_struct_map(system)
        else F.col("SystemProperties").cast("map<string,string>")
    )
    user_map = (
        _string_map("Properties")
        if _is_struct_map(user)
        else F.col("Properties").cast("map<string,string>")
    )
    frame = raw.select(
        F.col("SequenceNumber").cast("long").alias("SequenceNumber"),
        F.col("Offset").cast("string").alias("Offset"),
        F.col("EnqueuedTimeUtc").cast("string").alias("EnqueuedTimeUtc"),
        system_map.getItem("message-id").alias("MessageIdSystem"),
        user_map.alias("Properties"),
    )
    frame.schema  # noqa: B018 - forces analysis so a missing reader class fails here
    return frame


def _is_struct_map(data_type: T.DataType) -> bool:
    return isinstance(data_type, T.MapType) and isinstance(data_type.valueType, T.StructType)


def _text(value: Any) -> str | None:
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    return as_text(value, errors="replace")


def _decode_capture_files(batches: Iterator[Any]) -> Iterator[Any]:
    """Executor side: one binaryFile row per Avro file -> one row per event."""
    import fastavro
    import pandas as pd

    for batch in batches:
        rows: list[dict[str, Any]] = []
        for content in batch["content"]:
            for item in fastavro.reader(io.BytesIO(bytes(content))):
                # A Capture record is an Avro record: a dict (fastavro types it as any datum).
                record = cast("dict[str, Any]", item)
                system = record.get("SystemProperties") or {}
                properties = record.get("Properties") or {}
                rows.append(
                    {
                        "SequenceNumber": record.get("SequenceNumber"),
                        "Offset": _text(record.get("Offset")),
                        "EnqueuedTimeUtc": _text(record.get("EnqueuedTimeUtc")),
                        "MessageIdSystem": _text(system.get("message-id")),
                        "Properties": {k: _text(v) for k, v in properties.items()},
                    }
                )
        yield pd.DataFrame(rows, columns=[f.name for f in _CAPTURE_ROWS.fields])


def _capture_with_fastavro(spark: SparkSession, files: list[str]) -> DataFrame:
    contents = spark.read.format("binaryFile").load(files)
    return contents.select("content").mapInPandas(_decode_capture_files, _CAPTURE_ROWS)


# ---------------------------------------------------------------- which files


def select_inputs(
    files: Files, inputs: dict[str, str], fmt: str, window: Window, margin: timedelta
) -> dict[str, Selection]:
    """Each region's files to read (``_window.select_files``), listed through ``files``.

    Raises:
        InputError: a folder that cannot be listed, a foreign file, a region without a capture
            file, a window no file of any region falls in (one line each).
    """
    selected: dict[str, Selection] = {}
    for region, folder in inputs.items():
        try:
            entries = files.list_files(folder)
            selected[region] = select_files(region, folder, entries, fmt, window, margin)
        except (StorageError, SelectionError) as error:
            text = str(error)
            message = text if text.startswith("region ") else f"region {region}: {text}"
            raise InputError(message) from None
        if not entries:
            raise InputError(f"region {region}: {folder} holds no capture files")
    if window.bounded and not any(selection.files for selection in selected.values()):
        described = window.describe()
        raise InputError(
            f"no capture file of any region falls in the window since {described['since'] or '-'} "
            f"until {described['until'] or '-'} (widened by {margin.total_seconds():g} s)"
        )
    return selected

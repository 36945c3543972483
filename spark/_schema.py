"""Column names of the normalized record every stage of the audit works on."""

from __future__ import annotations

from pyspark.sql import types as T

REGION = "region"
MESSAGE_ID = "message_id"
ENQUEUED = "enqueued_time_utc"
PROPERTIES = "properties"
SEQUENCE = "sequence_number"

INPUT_SCHEMA = T.StructType(
    [
        T.StructField(MESSAGE_ID, T.StringType()),
        T.StructField(ENQUEUED, T.TimestampType()),
        T.StructField(PROPERTIES, T.MapType(T.StringType(), T.StringType())),
        T.StructField("body", T.StringType()),
        T.StructField(SEQUENCE, T.LongType()),
    ]
)
"""The json input record (``body`` is optional and not audited)."""

RECORD_SCHEMA = T.StructType(
    [
        T.StructField(REGION, T.StringType(), nullable=False),
        T.StructField(MESSAGE_ID, T.StringType()),
        T.StructField(ENQUEUED, T.TimestampType()),
        T.StructField(PROPERTIES, T.MapType(T.StringType(), T.StringType())),
        T.StructField(SEQUENCE, T.LongType()),
    ]
)
"""The normalized record: where it was captured, its id, enqueue time and properties."""

RECORD_COLUMNS = [field.name for field in RECORD_SCHEMA.fields]

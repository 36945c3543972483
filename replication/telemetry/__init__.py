"""Telemetry: replication's metrics and traces, and the SDK setup of the applications.

- ``_instruments``: the instruments, through the OpenTelemetry API only (a no-op until an
  application configures an SDK): :class:`TaskTelemetry` per task, :class:`BatchTelemetry` per
  batch, the trace context carried from source to replica, ``REPLICATION_TELEMETRY=off``.
- ``_setup``: the OpenTelemetry SDK and exporters, imported only when called:
  :func:`configure_function_app_telemetry` (Azure Monitor) and
  :func:`configure_local_telemetry` (OTLP or the console, for ``python -m replication run``),
  both sampling traces by the standard ``OTEL_TRACES_SAMPLER`` with this library's default
  (:func:`traces_sampler_settings`).

Importing this package imports the OpenTelemetry API, never its SDK.
"""

from ._instruments import (
    BATCH_DURATION,
    DIAGNOSTIC_ID,
    LAG,
    MESSAGES,
    SEND_FAILURES,
    TELEMETRY_SETTING,
    TRACE_PARENT,
    BatchTelemetry,
    TaskTelemetry,
    error_type,
    producer_span_context,
    skip_reason,
    telemetry_enabled,
    trace_context,
)
from ._setup import (
    CONNECTION_STRING_SETTING,
    DEFAULT_TRACES_SAMPLER,
    DEFAULT_TRACES_SAMPLER_ARG,
    OTLP_ENDPOINT_SETTING,
    TRACES_SAMPLER_ARG_SETTING,
    TRACES_SAMPLER_SETTING,
    configure_function_app_telemetry,
    configure_local_telemetry,
    traces_sampler,
    traces_sampler_settings,
)

__all__ = [
    "BATCH_DURATION",
    "CONNECTION_STRING_SETTING",
    "DEFAULT_TRACES_SAMPLER",
    "DEFAULT_TRACES_SAMPLER_ARG",
    "DIAGNOSTIC_ID",
    "LAG",
    "MESSAGES",
    "OTLP_ENDPOINT_SETTING",
    "SEND_FAILURES",
    "TELEMETRY_SETTING",
    "TRACES_SAMPLER_ARG_SETTING",
    "TRACES_SAMPLER_SETTING",
    "TRACE_PARENT",
    "BatchTelemetry",
    "TaskTelemetry",
    "configure_function_app_telemetry",
    "configure_local_telemetry",
    "error_type",
    "producer_span_context",
    "skip_reason",
    "telemetry_enabled",
    "trace_context",
    "traces_sampler",
    "traces_sampler_settings",
]

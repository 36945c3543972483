"""Configure the OpenTelemetry SDK and its exporters for the applications of this repository.

The library itself (``_instruments`` in this package) only uses the OpenTelemetry API; an
application decides where metrics and traces go. Two applications live here:

- The Function app (:func:`configure_function_app_telemetry`, called by
  :func:`replication.hosts.functions.build_app` before any runner exists): when
  ``APPLICATIONINSIGHTS_CONNECTION_STRING`` is set, ``configure_azure_monitor()`` of
  ``azure-monitor-opentelemetry`` exports metrics, traces and logs to Application Insights.
  Entra ID authentication: the exporter reads ``APPLICATIONINSIGHTS_AUTHENTICATION_STRING``
  (``Authorization=AAD`` or ``Authorization=AAD;ClientId=<user-assigned identity>``) itself
  (``azure/monitor/opentelemetry/exporter/export/_base.py``). The Azure SDK's own tracing
  (``azure_sdk`` instrumentation) is switched off: it would overwrite each replica's
  ``traceparent`` with a span outside the replicator's trace. Logs are left to the Functions
  host, which ships them already.
- Local runs (:func:`configure_local_telemetry`, for ``python -m replication run``): OTLP over
  HTTP when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set (the exporters read the standard
  ``OTEL_EXPORTER_OTLP_*`` settings), else the console exporter when
  ``REPLICATION_TELEMETRY=console``, else nothing (the API stays a no-op).

``REPLICATION_TELEMETRY=off`` configures nothing in either. The SDK and exporters are imported
only when they are used; a missing package fails with the ``pip install`` that fixes it.
Configuring twice in one process is refused by the SDK (a warning), so call these once.

What the local providers leave to the SDK's standard settings, and why:

- Exemplars: no filter is passed, so ``OTEL_METRICS_EXEMPLAR_FILTER`` decides, and unset it is
  the SDK's ``trace_based`` (``opentelemetry/sdk/metrics/_internal/__init__.py``): a
  measurement becomes an exemplar candidate only when the current context holds a sampled
  span (``exemplar/exemplar_filter.py``). The replicator records outside any current span (the
  batch span is started, never made current), so no measurement is offered to a reservoir and
  the filter's check is all it costs: within the noise of ``Histogram.record``, measured by
  ``benchmarks/bench_telemetry.py --split`` beside ``always_off`` and a record inside a sampled
  span.
- Export intervals: metrics every 15 s (:data:`METRIC_EXPORT_INTERVAL_MS`) unless
  ``OTEL_METRIC_EXPORT_INTERVAL`` is set; spans as ``OTEL_BSP_SCHEDULE_DELAY`` and the other
  ``OTEL_BSP_*`` settings say (unset, every 5 s or 512 spans).
- Sampling: ``OTEL_TRACES_SAMPLER`` and ``OTEL_TRACES_SAMPLER_ARG``, read by the SDK's
  TracerProvider; unset, every batch span is recorded (``parentbased_always_on``).
  ``parentbased_traceidratio`` with ``0.1`` records one batch in ten of those that start a
  trace (a batch whose messages share one producer context follows that producer's decision):
  the SDK drops an unrecorded span's links, which then cost neither their bounded attributes
  nor their export; each message's context is still read, as the sampler is given the links.
  Metrics are never sampled.
"""

from __future__ import annotations

import importlib
import logging
import os
from types import ModuleType

from replication.exceptions import MissingExtraError
from replication.extras import EXTRAS
from replication.settings import CONNECTION_STRING_SETTING, CONSOLE, OTLP_ENDPOINT_SETTING, Settings

logger = logging.getLogger(__name__)

METRIC_EXPORT_INTERVAL_MS = 15_000
"""How often local runs export metrics unless ``OTEL_METRIC_EXPORT_INTERVAL`` says otherwise
(the SDK's default is a minute)."""
METRIC_EXPORT_INTERVAL_SETTING = "OTEL_METRIC_EXPORT_INTERVAL"
"""The SDK's standard setting (milliseconds), which it reads itself when no interval is passed."""


def _load(module: str, package: str) -> ModuleType:
    """``module``, from ``package`` of the ``monitor`` extra.

    Raises:
        MissingExtraError: (an ImportError) naming the extra, when it is not installed.
    """
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise MissingExtraError(
            f"telemetry export needs {package}, from the 'monitor' extra: "
            f"{EXTRAS['monitor'].install_hint()}",
            extra="monitor",
        ) from error


def configure_function_app_telemetry(settings: Settings) -> bool:
    """Export to Application Insights when its connection string is set; True if configured.

    The connection string is passed by the settings, never logged."""
    connection_string = settings.app_insights_connection_string
    if not settings.telemetry_enabled or connection_string is None:
        return False
    distro = _load("azure.monitor.opentelemetry", "azure-monitor-opentelemetry")
    distro.configure_azure_monitor(
        connection_string=connection_string.get_secret_value(),
        instrumentation_options={"azure_sdk": {"enabled": False}},
        # The Functions host already ships every Python log record to Application Insights;
        # a second handler would store each line twice.
        disable_logging=True,
    )
    logger.info("telemetry: exporting to Azure Monitor")
    return True


def configure_local_telemetry(settings: Settings) -> str | None:
    """Set up the SDK for a local run: ``"otlp"``, ``"console"`` or None (nothing configured).

    OTLP when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set, else the console when
    ``REPLICATION_TELEMETRY=console``; ``REPLICATION_TELEMETRY=off`` wins over both."""
    if not settings.telemetry_enabled:
        return None
    if settings.otlp_endpoint:
        package = "opentelemetry-exporter-otlp-proto-http"
        metric_exporter = _load(
            "opentelemetry.exporter.otlp.proto.http.metric_exporter", package
        ).OTLPMetricExporter()
        span_exporter = _load(
            "opentelemetry.exporter.otlp.proto.http.trace_exporter", package
        ).OTLPSpanExporter()
        kind = "otlp"
    elif settings.telemetry_console:
        sdk_metrics_export = _load("opentelemetry.sdk.metrics.export", "opentelemetry-sdk")
        sdk_trace_export = _load("opentelemetry.sdk.trace.export", "opentelemetry-sdk")
        metric_exporter = sdk_metrics_export.ConsoleMetricExporter()
        span_exporter = sdk_trace_export.ConsoleSpanExporter()
        kind = CONSOLE
    else:
        return None
    _install(metric_exporter, span_exporter)
    logger.info("telemetry: exporting to %s", kind)
    return kind


def _install(metric_exporter: object, span_exporter: object) -> None:
    """Make a MeterProvider and a TracerProvider with these exporters the global ones."""
    from opentelemetry import metrics, trace

    sdk_metrics = _load("opentelemetry.sdk.metrics", "opentelemetry-sdk")
    sdk_metrics_export = _load("opentelemetry.sdk.metrics.export", "opentelemetry-sdk")
    sdk_trace = _load("opentelemetry.sdk.trace", "opentelemetry-sdk")
    sdk_trace_export = _load("opentelemetry.sdk.trace.export", "opentelemetry-sdk")
    sdk_resources = _load("opentelemetry.sdk.resources", "opentelemetry-sdk")
    resource = sdk_resources.Resource.create({"service.name": "replication"})
    # The standard setting wins when set; the SDK reads and checks it itself.
    interval = None if os.environ.get(METRIC_EXPORT_INTERVAL_SETTING) else METRIC_EXPORT_INTERVAL_MS
    reader = sdk_metrics_export.PeriodicExportingMetricReader(
        metric_exporter, export_interval_millis=interval
    )
    metrics.set_meter_provider(
        sdk_metrics.MeterProvider(resource=resource, metric_readers=[reader])
    )
    tracer_provider = sdk_trace.TracerProvider(resource=resource)
    tracer_provider.add_span_processor(sdk_trace_export.BatchSpanProcessor(span_exporter))
    trace.set_tracer_provider(tracer_provider)


__all__ = [
    "CONNECTION_STRING_SETTING",
    "OTLP_ENDPOINT_SETTING",
    "configure_function_app_telemetry",
    "configure_local_telemetry",
]

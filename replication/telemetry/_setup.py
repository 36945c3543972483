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
- Sampling: ``OTEL_TRACES_SAMPLER`` and ``OTEL_TRACES_SAMPLER_ARG``, the standard settings,
  in both applications (the OpenTelemetry SDK reads them, and so does
  ``configure_azure_monitor``). Where ``OTEL_TRACES_SAMPLER`` is not set, the default is not
  the SDK's (``parentbased_always_on``) nor the Azure Monitor distro's (5 traces a second) but
  :data:`DEFAULT_TRACES_SAMPLER` with a ratio of :data:`DEFAULT_TRACES_SAMPLER_ARG`
  (``OTEL_TRACES_SAMPLER_ARG`` alone still sets the ratio; :func:`traces_sampler_settings`;
  the Function app passes the ratio samplers' standard names on as the distro spells them,
  :data:`DISTRO_SAMPLER_NAMES`):
  a batch whose messages share one producer context follows that producer's decision, so a
  sampled trace is always continued, and one batch in ten of those that start a trace is
  recorded. The SDK drops an unrecorded span's links, which then cost neither their bounded
  attributes nor their export; each message's context is still read, as the sampler is given
  the links. Metrics are never sampled. ``OTEL_TRACES_SAMPLER=always_on`` records every batch.
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Mapping
from types import ModuleType
from typing import Any

from replication.exceptions import ConfigurationError, MissingExtraError
from replication.extras import EXTRAS
from replication.settings import CONNECTION_STRING_SETTING, CONSOLE, OTLP_ENDPOINT_SETTING, Settings

logger = logging.getLogger(__name__)

METRIC_EXPORT_INTERVAL_MS = 15_000
"""How often local runs export metrics unless ``OTEL_METRIC_EXPORT_INTERVAL`` says otherwise
(the SDK's default is a minute)."""
METRIC_EXPORT_INTERVAL_SETTING = "OTEL_METRIC_EXPORT_INTERVAL"
"""The SDK's standard setting (milliseconds), which it reads itself when no interval is passed."""


TRACES_SAMPLER_SETTING = "OTEL_TRACES_SAMPLER"
TRACES_SAMPLER_ARG_SETTING = "OTEL_TRACES_SAMPLER_ARG"
DEFAULT_TRACES_SAMPLER = "parentbased_traceidratio"
"""The sampler where ``OTEL_TRACES_SAMPLER`` names none (issue 37's decision)."""
DEFAULT_TRACES_SAMPLER_ARG = "0.1"
"""Its ratio of the traces that start at the replicator, unless ``OTEL_TRACES_SAMPLER_ARG``."""


def traces_sampler_settings(environ: Mapping[str, str]) -> dict[str, str]:
    """The sampler settings to apply: none where ``environ`` names a sampler (the SDK reads
    them, with its own default ratio), else :data:`DEFAULT_TRACES_SAMPLER` with
    ``OTEL_TRACES_SAMPLER_ARG`` or :data:`DEFAULT_TRACES_SAMPLER_ARG` as its ratio.

    Raises:
        ConfigurationError: that ratio is not a number from 0 to 1.
    """
    if environ.get(TRACES_SAMPLER_SETTING, "").strip():
        return {}
    ratio = environ.get(TRACES_SAMPLER_ARG_SETTING, "").strip() or DEFAULT_TRACES_SAMPLER_ARG
    try:
        valid = 0.0 <= float(ratio) <= 1.0
    except ValueError:
        valid = False
    if not valid:
        raise ConfigurationError(
            f"'{ratio}' is not a ratio from 0 to 1 (the share of traces recorded by "
            f"{DEFAULT_TRACES_SAMPLER}, the default sampler)",
            source=f"app setting {TRACES_SAMPLER_ARG_SETTING}",
        )
    return {TRACES_SAMPLER_SETTING: DEFAULT_TRACES_SAMPLER, TRACES_SAMPLER_ARG_SETTING: ratio}


DISTRO_SAMPLER_NAMES = {
    "traceidratio": "trace_id_ratio",
    "parentbased_traceidratio": "parentbased_trace_id_ratio",
}
"""The OpenTelemetry names of the ratio samplers, and what azure-monitor-opentelemetry 1.8.11
calls them (``TRACE_ID_RATIO_SAMPLER``, ``PARENT_BASED_TRACE_ID_RATIO_SAMPLER`` in its
``_constants.py``): it refuses the standard names and falls back to 5 traces a second."""


def traces_sampler(environ: Mapping[str, str]) -> Any:
    """The sampler of a local TracerProvider, an ``opentelemetry.sdk.trace.sampling.Sampler``:
    None where ``environ`` names one (the SDK reads ``OTEL_TRACES_SAMPLER`` and its argument
    itself), else :data:`DEFAULT_TRACES_SAMPLER` at the ratio :func:`traces_sampler_settings`
    gives. Imports the SDK."""
    default = traces_sampler_settings(environ)
    if not default:
        return None
    sampling = _load("opentelemetry.sdk.trace.sampling", "opentelemetry-sdk")
    ratio = float(default[TRACES_SAMPLER_ARG_SETTING])
    return sampling.ParentBased(sampling.TraceIdRatioBased(ratio))


def _distro_sampler_settings(environ: Mapping[str, str]) -> dict[str, str]:
    """The sampler settings for ``configure_azure_monitor``: :func:`traces_sampler_settings`,
    a ratio sampler named as the distro names it."""
    settings = {**environ, **traces_sampler_settings(environ)}
    name = settings.get(TRACES_SAMPLER_SETTING, "").strip().lower()
    if name not in DISTRO_SAMPLER_NAMES:
        return traces_sampler_settings(environ)
    return {
        TRACES_SAMPLER_SETTING: DISTRO_SAMPLER_NAMES[name],
        **{k: v for k, v in settings.items() if k == TRACES_SAMPLER_ARG_SETTING},
    }


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
    # The distro reads the sampler settings from the process environment itself.
    os.environ.update(_distro_sampler_settings(os.environ))
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
    tracer_provider = sdk_trace.TracerProvider(
        resource=resource, sampler=traces_sampler(os.environ)
    )
    tracer_provider.add_span_processor(sdk_trace_export.BatchSpanProcessor(span_exporter))
    trace.set_tracer_provider(tracer_provider)


__all__ = [
    "CONNECTION_STRING_SETTING",
    "DEFAULT_TRACES_SAMPLER",
    "DEFAULT_TRACES_SAMPLER_ARG",
    "OTLP_ENDPOINT_SETTING",
    "TRACES_SAMPLER_ARG_SETTING",
    "TRACES_SAMPLER_SETTING",
    "configure_function_app_telemetry",
    "configure_local_telemetry",
    "traces_sampler",
    "traces_sampler_settings",
]

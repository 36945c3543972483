"""Metrics and traces of replication, through the OpenTelemetry API only.

The library depends on ``opentelemetry-api`` alone: with no SDK configured every call below is
the API's no-op. The application configures the SDK and its exporters
(``_setup`` in this package: Azure Monitor in the Function app, OTLP or the console
for local runs). One app setting switches everything off: ``REPLICATION_TELEMETRY=off`` (also
``false``, ``0``, ``none``), and then replicas keep the trace properties their source carried.

Metrics (meter ``replication``; the names and attribute keys are what the Azure Monitor alert
queries use, keep them):

- ``replication.messages`` (counter, ``{message}``): one count per message and outcome, exact;
  a batch adds its messages once per outcome, target and reason when it ends (one ``add(n)``
  each, not one per message).
  ``replication.outcome`` is ``received`` (per message of a batch), ``forwarded`` (per replica a
  target acknowledged), ``skipped`` (settled without a replica, with ``replication.reason``:
  ``LoopPrevention``, ``NoRouteMatched``, ``ValidationFailed``, ...), ``dead_lettered`` (per
  parked copy the parking entity acknowledged, with ``replication.reason`` = its
  ``DeadLetterReason``) or ``failed`` (per replica still unsent when the invocation gave up,
  with ``replication.reason`` = the error type; the source redelivers it).
- ``replication.lag`` (histogram, ``s``): source enqueue time to the target's acknowledgement,
  one observation per send call, the lag of that call's oldest replica (the worst of the call:
  the histogram's maximum is the largest replica lag, its count the send calls that
  acknowledged something). ``REPLICATION_TELEMETRY_LAG=per-replica`` records one observation
  per forwarded replica instead (the exact distribution, at about 7 points of the send path's
  CPU; README, Telemetry).
- ``replication.batch.duration`` (histogram, ``s``): one observation per batch the runner ran,
  with ``error.type`` when it raised.
- ``replication.send.failures`` (counter, ``{failure}``): one per failed send call, by
  ``error.type`` (the error's reason, e.g. ``MessageTooLarge``, else its class name) and target.

Every measurement has ``replication.task``; those about a target have ``replication.target``
(``namespace/entity``). Messaging semantic conventions where they apply: ``messaging.system``
(``servicebus`` | ``eventhubs``), ``messaging.destination.name`` (the entity: the source for
``received``/``skipped``, the target otherwise) and ``messaging.operation.type`` (``process``
for what is read, ``send`` for what is written).

Traces (tracer ``replication``): per batch a CONSUMER span ``process <source entity>``
(``messaging.operation.type=process``). Its relation to the producers follows the messaging
conventions for batch processing: a link to the trace context of every message that carries one
(``traceparent``, else ``Diagnostic-Id``, as the Azure SDKs write them); when every message of
the batch carries the same context (a single message, or one producer's batch), that context is
also the span's parent, so the source region's trace continues into the replicator (and
Application Map draws the edge, which links alone do not); otherwise the span starts a trace.
Under it, per target a PRODUCER span ``send <target entity>``
(``messaging.operation.type=send``), whose context overwrites ``traceparent`` and
``Diagnostic-Id`` (and ``tracestate``) on every replica sent to that target: the consumer in
the target region continues from the replicator (Application Map: region, replicator, region).
Without a configured TracerProvider nothing is extracted or injected, and replicas keep their
source's trace properties. Which batch spans are recorded is the TracerProvider's sampler's
decision (``_setup``: ``OTEL_TRACES_SAMPLER``, by default parent-based with 10 % of the roots);
an unrecorded span still gives its replicas a valid context, not sampled.

Recording never raises into replication: the API and SDK swallow their own errors.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import metrics, trace
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from replication.envelope import Envelope, PropertyUpdate
from replication.settings import TELEMETRY_SETTING, telemetry_on

INSTRUMENTATION_NAME = "replication"
"""The meter's and the tracer's name."""

MESSAGES = "replication.messages"
LAG = "replication.lag"
BATCH_DURATION = "replication.batch.duration"
SEND_FAILURES = "replication.send.failures"

TASK = "replication.task"
TARGET = "replication.target"
OUTCOME = "replication.outcome"
REASON = "replication.reason"
ERROR_TYPE = "error.type"
MESSAGING_SYSTEM = "messaging.system"
DESTINATION = "messaging.destination.name"
SUBSCRIPTION = "messaging.destination.subscription.name"
CONSUMER_GROUP = "messaging.consumer.group.name"
OPERATION_TYPE = "messaging.operation.type"
BATCH_COUNT = "messaging.batch.message_count"

RECEIVED = "received"
FORWARDED = "forwarded"
SKIPPED = "skipped"
DEAD_LETTERED = "dead_lettered"
FAILED = "failed"

TRACE_PARENT = "traceparent"
TRACE_STATE = "tracestate"
DIAGNOSTIC_ID = "Diagnostic-Id"
"""Application properties the Azure SDKs write (``azure/servicebus/_common/tracing.py``,
``azure/eventhub/_tracing.py``): both carry the W3C ``traceparent`` value."""

LOOP_PREVENTION = "LoopPrevention"

# Seconds between two close calls (latency buckets): sub-second to the one-hour outage tolerance.
LAG_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 1800, 3600, 7200)
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)

_PROPAGATOR = TraceContextTextMapPropagator()


def telemetry_enabled(environ: Mapping[str, str]) -> bool:
    """False when ``REPLICATION_TELEMETRY`` in ``environ`` says off; on by default (the rule of
    :attr:`replication.settings.Settings.telemetry_enabled`)."""
    return telemetry_on(environ.get(TELEMETRY_SETTING, ""))


def skip_reason(reason: str) -> str:
    """A bounded metric value for a pattern's free-text skip reason: its leading reason code
    (``NoRouteMatched: ...``), else ``LoopPrevention`` (a replica, or a target on the path)."""
    code = reason.partition(":")[0].strip()
    if code.isidentifier() and code[:1].isupper():
        return code
    return LOOP_PREVENTION


def error_type(error: BaseException) -> str:
    """``error.type`` of a failure: the reason a ForwardError carries, else its class name."""
    reason = getattr(error, "reason", None)
    return reason if isinstance(reason, str) and reason else type(error).__name__


def trace_context(envelope: Envelope) -> otel_context.Context | None:
    """The W3C trace context the producer put on ``envelope``, if any (None if invalid)."""
    span_context = producer_span_context(envelope.application_properties)
    if span_context is None:
        return None
    return trace.set_span_in_context(trace.NonRecordingSpan(span_context))


# W3C Trace Context, ``traceparent``: version-trace id-parent id-flags, lowercase hex
# (https://www.w3.org/TR/trace-context/#traceparent-header-field-values), as
# TraceContextTextMapPropagator reads it.
_TRACEPARENT = re.compile(
    r"^[ \t]*([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?[ \t]*$"
)


_TRACE_FLAGS = {f"{flags:02x}": trace.TraceFlags(flags) for flags in range(256)}
"""Every ``trace-flags`` field's TraceFlags, built once (a message's is almost always ``01``)."""


def producer_span_context(properties: Mapping[str, Any]) -> trace.SpanContext | None:
    """The producer's span context in these application properties (``traceparent``, else
    ``Diagnostic-Id``; ``tracestate``), if any (None if invalid)."""
    parent = properties.get(TRACE_PARENT) or properties.get(DIAGNOSTIC_ID)
    return _span_context(parent, properties.get(TRACE_STATE))


def _span_context(parent: object, state: object) -> trace.SpanContext | None:
    """The span context of a ``traceparent`` value and its ``tracestate`` (None: no parent, or
    one that is not text or not valid).

    Every message of a batch is read, so a ``traceparent`` alone (what the Azure SDKs write) is
    parsed here by the propagator's rules, without the Context that its ``extract`` builds for
    each message (more than half of the cost); a message with a ``tracestate`` goes through
    the propagator itself, which also bounds and parses the state.
    """
    if isinstance(parent, bytes):
        parent = parent.decode("ascii", "replace")
    if not isinstance(parent, str):
        return None
    if isinstance(state, str):
        extracted = _PROPAGATOR.extract({TRACE_PARENT: parent, TRACE_STATE: state})
        span_context = trace.get_current_span(extracted).get_span_context()
        return span_context if span_context.is_valid else None
    match = _TRACEPARENT.match(parent)
    if match is None:
        return None
    version, trace_id, span_id, flags, rest = match.groups()
    if version == "ff" or (version == "00" and rest):
        return None  # ff is forbidden; version 00 has nothing after the flags
    # trace_id, span_id, is_remote, trace_flags (positional: SpanContext is a tuple).
    span_context = trace.SpanContext(int(trace_id, 16), int(span_id, 16), True, _TRACE_FLAGS[flags])
    return span_context if span_context.is_valid else None


class BatchTelemetry:
    """The sensor of one batch: the hooks the runner fires while it runs it, as a context
    manager around the whole run (:meth:`TaskTelemetry.batch`), or around parking messages
    that could not even be read (:meth:`TaskTelemetry.parking`).

    The runner only says what happened; which counter, histogram or span that makes is decided
    here. This base class records nothing (telemetry off); :class:`_Recording` records.
    ``target`` is always ``namespace/entity`` (empty: no parking entity, a dry run).
    """

    def __enter__(self) -> BatchTelemetry:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        return None

    def on_skip(self, reason: str) -> None:
        """The pattern settled a message without a replica (``reason``: its free text)."""

    def on_send(self, target: str, entity: str, count: int) -> PropertyUpdate | None:
        """``count`` replicas are about to be sent to ``target``; what they must carry instead
        of their own trace properties (the send span's context), which the sender writes while
        it builds each SDK message. None: they keep theirs."""
        return None

    def on_sent(self, target: str, enqueued: Sequence[float | None]) -> None:
        """``target`` acknowledged replicas, whose sources were enqueued at ``enqueued`` (epoch
        seconds; None when unknown)."""

    def on_send_error(self, target: str, error: BaseException) -> None:
        """One send call to ``target`` failed (it may have acknowledged part of its replicas)."""

    def on_give_up(self, target: str, count: int, error: BaseException) -> None:
        """The invocation gave up with ``count`` replicas (or parked copies) still unsent."""

    def on_parked(self, target: str, reason: str) -> None:
        """The parking entity ``target`` acknowledged a parked copy parked for ``reason``."""


class TaskTelemetry:
    """The instruments of one task; build once per runner. ``enabled=False`` records nothing.

    ``systems`` maps namespace names to ``servicebus`` / ``eventhubs`` (``messaging.system``);
    unknown namespaces are recorded without it. Providers default to the global ones (proxies
    until the application configures the SDK, so build order does not matter).
    """

    def __init__(
        self,
        task: str,
        *,
        source_namespace: str = "",
        source_entity: str = "",
        subscription: str | None = None,
        consumer_group: str | None = None,
        systems: Mapping[str, str] | None = None,
        enabled: bool = True,
        lag_per_replica: bool = False,
        meter_provider: metrics.MeterProvider | None = None,
        tracer_provider: trace.TracerProvider | None = None,
    ) -> None:
        self.task = task
        self.enabled = enabled
        self.lag_per_replica = lag_per_replica
        """One lag observation per replica instead of one per send call."""
        self._systems = dict(systems or {})
        self._source: dict[str, str] = {TASK: task, OPERATION_TYPE: "process"}
        if source_entity:
            self._source[DESTINATION] = source_entity
        if source_namespace in self._systems:
            self._source[MESSAGING_SYSTEM] = self._systems[source_namespace]
        self._span_attributes: dict[str, str] = dict(self._source)
        if subscription:
            self._span_attributes[SUBSCRIPTION] = subscription
        if consumer_group:
            self._span_attributes[CONSUMER_GROUP] = consumer_group
        self._span_name = f"process {source_entity or task}"
        self._target_attributes: dict[tuple[str, str], dict[str, str]] = {}
        self._count_attributes: dict[tuple[str, str, str], dict[str, str]] = {}
        self._tracer_provider = tracer_provider
        meter = (meter_provider or metrics.get_meter_provider()).get_meter(INSTRUMENTATION_NAME)
        self._tracer = (tracer_provider or trace.get_tracer_provider()).get_tracer(
            INSTRUMENTATION_NAME
        )
        self._messages = meter.create_counter(
            MESSAGES, unit="{message}", description="Messages by replication outcome"
        )
        self._lag = meter.create_histogram(
            LAG,
            unit="s",
            description=(
                "Source enqueue time to the target's acknowledgement: per send call, of its "
                "oldest replica (REPLICATION_TELEMETRY_LAG=per-replica: of each replica)"
            ),
            explicit_bucket_boundaries_advisory=LAG_BUCKETS,
        )
        self._duration = meter.create_histogram(
            BATCH_DURATION,
            unit="s",
            description="Time the runner took for one batch",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
        )
        self._send_failures = meter.create_counter(
            SEND_FAILURES, unit="{failure}", description="Failed send calls by error type"
        )

    # -- attributes ------------------------------------------------------------------------

    def target_attributes(self, target: str, entity: str = "") -> dict[str, str]:
        """The attributes of measurements about ``target`` (``namespace/entity``)."""
        key = (target, entity)
        attributes = self._target_attributes.get(key)
        if attributes is None:
            namespace, _, path = target.partition("/")
            attributes = {TASK: self.task, OPERATION_TYPE: "send"}
            if target:  # empty: no parking entity (a dry run's rejected messages)
                attributes[TARGET] = target
            if entity or path:
                attributes[DESTINATION] = entity or path
            if namespace in self._systems:
                attributes[MESSAGING_SYSTEM] = self._systems[namespace]
            self._target_attributes[key] = attributes
        return attributes

    # -- metrics ---------------------------------------------------------------------------

    def received(self, count: int) -> None:
        if self.enabled and count:
            self._messages.add(count, {**self._source, OUTCOME: RECEIVED})

    def count(self, counts: Mapping[tuple[str, str, str], int]) -> None:
        """Add a batch's messages: ``counts`` maps (outcome, target, reason) to how many, the
        target empty for ``skipped``, the reason empty for ``forwarded``. One ``add`` each."""
        if not self.enabled:
            return
        for key, count in counts.items():
            attributes = self._count_attributes.get(key)
            if attributes is None:
                outcome, target, reason = key
                base = self._source if outcome == SKIPPED else self.target_attributes(target)
                attributes = {**base, OUTCOME: outcome}
                if reason:
                    attributes[REASON] = reason
                self._count_attributes[key] = attributes
            self._messages.add(count, attributes)

    def record_lag(self, target: str, enqueued: Sequence[float | None]) -> None:
        """One send call to ``target`` was acknowledged for replicas whose sources were
        enqueued at ``enqueued`` (epoch s; None: unknown): its oldest replica's lag, or every
        replica's with :attr:`lag_per_replica`; one clock reading and one attribute set."""
        if self.enabled and enqueued:
            self._record_lag(self.target_attributes(target), enqueued)

    def _record_lag(self, attributes: Mapping[str, str], enqueued: Sequence[float | None]) -> None:
        now = time.time()
        record = self._lag.record
        if self.lag_per_replica:
            for when in enqueued:
                if when is not None:
                    record(max(0.0, now - when), attributes)
            return
        oldest = min((when for when in enqueued if when is not None), default=None)
        if oldest is not None:
            record(max(0.0, now - oldest), attributes)

    def failed(self, target: str, count: int, error: BaseException) -> None:
        """``count`` replicas (or parked copies) left unsent when the invocation gave up."""
        if self.enabled and count:
            attributes = self.target_attributes(target)
            self._messages.add(count, {**attributes, OUTCOME: FAILED, REASON: error_type(error)})

    def send_failed(self, target: str, error: BaseException) -> None:
        if self.enabled:
            self._send_failures.add(
                1, {**self.target_attributes(target), ERROR_TYPE: error_type(error)}
            )

    # -- batches ---------------------------------------------------------------------------

    def tracing(self) -> bool:
        """False while nobody configured a TracerProvider: the API's spans are no-ops, so the
        per-message work of extracting trace contexts is skipped."""
        provider = self._tracer_provider or trace.get_tracer_provider()
        return not isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider)

    def batch(self, envelopes: Sequence[Envelope]) -> BatchTelemetry:
        """The sensor of one batch; use as a context manager around the whole run."""
        if not self.enabled:
            return _NOTHING
        return _RecordingBatch(self, envelopes)

    def parking(self, count: int) -> BatchTelemetry:
        """The sensor of parking ``count`` messages that could not be read (no span, no batch
        duration: they were never a batch the pattern planned)."""
        if not self.enabled:
            return _NOTHING
        return _RecordingParking(self, count)

    def _record_duration(self, seconds: float, error: BaseException | None) -> None:
        attributes: dict[str, str] = {TASK: self.task}
        if error is not None:
            attributes[ERROR_TYPE] = error_type(error)
        self._duration.record(seconds, attributes)


_NOTHING = BatchTelemetry()


class _Recording(BatchTelemetry):
    """Telemetry on: the hooks become the task's counters and histograms. Forwarded, skipped
    and parked messages are counted here and added when the batch ends (:meth:`_flush`),
    once per outcome, target and reason; the lag is recorded per send call as it returns."""

    def __init__(self, telemetry: TaskTelemetry) -> None:
        self._telemetry = telemetry
        self._counts: dict[tuple[str, str, str], int] = {}

    def _add(self, key: tuple[str, str, str], count: int) -> None:
        self._counts[key] = self._counts.get(key, 0) + count

    def _flush(self) -> None:
        if self._counts:
            self._telemetry.count(self._counts)
            self._counts = {}

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._flush()

    def on_skip(self, reason: str) -> None:
        self._add((SKIPPED, "", skip_reason(reason)), 1)

    def on_sent(self, target: str, enqueued: Sequence[float | None]) -> None:
        if enqueued:
            self._add((FORWARDED, target, ""), len(enqueued))
            self._telemetry.record_lag(target, enqueued)

    def on_send_error(self, target: str, error: BaseException) -> None:
        self._telemetry.send_failed(target, error)

    def on_give_up(self, target: str, count: int, error: BaseException) -> None:
        self._telemetry.failed(target, count, error)

    def on_parked(self, target: str, reason: str) -> None:
        self._add((DEAD_LETTERED, target, reason), 1)


class _RecordingParking(_Recording):
    """Parking unreadable messages: they count as received."""

    def __init__(self, telemetry: TaskTelemetry, count: int) -> None:
        super().__init__(telemetry)
        self._count = count

    def __enter__(self) -> BatchTelemetry:
        self._telemetry.received(self._count)
        return self


class _RecordingBatch(_Recording):
    """A batch with telemetry on: also the process span, one send span per target, the
    duration."""

    def __init__(self, telemetry: TaskTelemetry, envelopes: Sequence[Envelope]) -> None:
        super().__init__(telemetry)
        self._envelopes = envelopes
        self._sends: dict[str, tuple[trace.Span, PropertyUpdate | None, list[int]]] = {}
        self._process: trace.Span = trace.INVALID_SPAN
        self._started = 0.0
        self._tracing = False

    def __enter__(self) -> BatchTelemetry:
        telemetry = self._telemetry
        self._started = time.perf_counter()
        telemetry.received(len(self._envelopes))
        self._tracing = telemetry.tracing()
        if not self._tracing:
            return self
        # One link per distinct producer context: a batch of one producer's messages carries
        # the same context many times, and it is read and linked once.
        links: dict[tuple[int, int], trace.Link] = {}
        traced = 0
        parent: trace.SpanContext | None = None
        seen: dict[object, trace.SpanContext | None] = {}
        for envelope in self._envelopes:
            properties = envelope.application_properties
            value = properties.get(TRACE_PARENT) or properties.get(DIAGNOSTIC_ID)
            if value is None:
                continue
            state = properties.get(TRACE_STATE)
            # What decides the extracted context: the parent, and the state when there is one.
            key = value if state is None else (value, state)
            if key in seen:
                span_context = seen[key]
            else:
                span_context = seen[key] = _span_context(value, state)
                if span_context is not None:
                    ids = (span_context.trace_id, span_context.span_id)
                    if ids not in links:
                        links[ids] = trace.Link(span_context)
            if span_context is not None:
                traced += 1
                parent = span_context
        attributes: dict[str, str | int] = {
            **telemetry._span_attributes,
            BATCH_COUNT: len(self._envelopes),
        }
        self._process = telemetry._tracer.start_span(
            telemetry._span_name,
            # A parent only when every message shares it: picking one of several would put
            # the others' replicas in a stranger's trace (messaging conventions: links).
            context=(
                trace.set_span_in_context(trace.NonRecordingSpan(parent))
                if parent is not None and len(links) == 1 and traced == len(self._envelopes)
                else None
            ),
            kind=trace.SpanKind.CONSUMER,
            attributes=attributes,
            links=list(links.values()),
        )
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        super().__exit__(kind, error, traceback)
        for span, _, sent in self._sends.values():
            span.set_attribute(BATCH_COUNT, sent[0])
            if error is not None:
                _fail(span, error)
            span.end()
        if error is not None:
            _fail(self._process, error)
        self._process.end()
        self._telemetry._record_duration(time.perf_counter() - self._started, error)

    def on_send(self, target: str, entity: str, count: int) -> PropertyUpdate | None:
        if not self._tracing:
            return None
        entry = self._sends.get(target)
        if entry is None:
            telemetry = self._telemetry
            parent = trace.set_span_in_context(self._process)
            span = telemetry._tracer.start_span(
                f"send {entity}",
                context=parent,
                kind=trace.SpanKind.PRODUCER,
                attributes=telemetry.target_attributes(target, entity),
            )
            carrier: dict[str, str] = {}
            _PROPAGATOR.inject(carrier, context=trace.set_span_in_context(span))
            entry = self._sends[target] = (span, _trace_update(carrier), [0])
        return entry[1]

    def on_sent(self, target: str, enqueued: Sequence[float | None]) -> None:
        super().on_sent(target, enqueued)
        entry = self._sends.get(target)
        if entry is not None:
            entry[2][0] += len(enqueued)


def _trace_update(carrier: Mapping[str, str]) -> PropertyUpdate | None:
    """What replicas carry of the send span's context ``carrier`` (injected): ``traceparent``
    and ``Diagnostic-Id``, and its ``tracestate`` or none. None when nothing was injected (the
    span has no valid context)."""
    parent = carrier.get(TRACE_PARENT)
    if parent is None:
        return None
    values = {TRACE_PARENT: parent, DIAGNOSTIC_ID: parent}
    state = carrier.get(TRACE_STATE)
    if state is not None:
        values[TRACE_STATE] = state
        return PropertyUpdate(values)
    return PropertyUpdate(values, remove=(TRACE_STATE,))


def _fail(span: trace.Span, error: BaseException) -> None:
    span.set_attribute(ERROR_TYPE, error_type(error))
    span.set_status(trace.Status(trace.StatusCode.ERROR, str(error)[:256]))


__all__ = [
    "BATCH_DURATION",
    "DIAGNOSTIC_ID",
    "LAG",
    "MESSAGES",
    "SEND_FAILURES",
    "TELEMETRY_SETTING",
    "TRACE_PARENT",
    "BatchTelemetry",
    "TaskTelemetry",
    "error_type",
    "producer_span_context",
    "skip_reason",
    "telemetry_enabled",
    "trace_context",
]

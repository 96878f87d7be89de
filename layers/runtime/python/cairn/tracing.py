"""OpenTelemetry spans (docs/operations.md, "Traces"): the request, the run, each step, each
model call, each tool call and the checkpoint. One run is one trace wherever its steps run:
the run keeps its span's context (W3C `traceparent`) in its row, which every step command
names, so a step taken from the queue, re-sent by the sweeper or redelivered after a crash
joins the same trace.

Exported over OTLP (HTTP) when the standard variables ask for it (`OTEL_EXPORTER_OTLP_ENDPOINT`
or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`; `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`
turn it off), to any collector. Otherwise nothing is set up and every `span` below returns
at once (bench/tracing.py measures both).
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, ParamSpec, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan, Span, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

P = ParamSpec("P")
R = TypeVar("R")
SERVER, CLIENT, INTERNAL = SpanKind.SERVER, SpanKind.CLIENT, SpanKind.INTERNAL
_W3C = TraceContextTextMapPropagator()
_lock = threading.Lock()
_provider: Any = None  # the SDK's TracerProvider once configured (its import is not free)
_tracer: trace.Tracer | None = None
_NOTHING = NonRecordingSpan(trace.INVALID_SPAN_CONTEXT)

Attributes = Mapping[str, str | int | float | bool | list[str]]


def wanted(env: Mapping[str, str] = os.environ) -> bool:
    """Whether the standard OTEL_* variables ask for traces over OTLP."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if env.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower() in ("none", ""):
        return False
    return bool(
        env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    )


def configure() -> bool:
    """Set up export when the environment asks for it (once a process); True when on."""
    global _provider, _tracer
    with _lock:
        if _provider is not None or not wanted():
            return _provider is not None
        # Imported here: a process that exports nothing never loads the SDK.
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        named = {} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": "cairn"}
        provider = TracerProvider(resource=Resource.create(named))
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        _provider, _tracer = provider, provider.get_tracer("cairn")
        return True


def flush(timeout_millis: int = 5000) -> None:
    """Export what is buffered: at the end of every Lambda invocation (the environment may
    be frozen until the next), and before a local process exits."""
    if _provider is not None:
        _provider.force_flush(timeout_millis)


def shutdown() -> None:
    global _provider, _tracer
    with _lock:
        if _provider is not None:
            _provider.shutdown()
        _provider = _tracer = None


@contextmanager
def span(
    name: str,
    *,
    kind: SpanKind = INTERNAL,
    parent: str | None = None,
    attributes: Attributes | None = None,
    errors: bool = True,
) -> Iterator[Span]:
    """A span around the block, current within it; `parent`: a `traceparent` to continue
    (a run's, or a caller's header), else the current span's. An exception is recorded
    and (with `errors`) marks the span an error. Off: a span that records nothing, at no
    cost."""
    tracer = _tracer
    if tracer is None:
        yield _NOTHING
        return
    ctx = _W3C.extract({"traceparent": parent}) if parent else None
    with tracer.start_as_current_span(
        name,
        context=ctx,
        kind=kind,
        attributes=dict(attributes or {}),
        set_status_on_exception=errors,
    ) as current:
        yield current


def traceparent() -> str | None:
    """The current span's context as a W3C `traceparent`, to keep with a run; None when off."""
    if _tracer is None:
        return None
    carrier: dict[str, str] = {}
    _W3C.inject(carrier)
    return carrier.get("traceparent")


def current_context() -> otel_context.Context | None:
    """The context to hand to a thread (a thread starts with none of its own)."""
    return otel_context.get_current() if _tracer is not None else None


@contextmanager
def within(ctx: otel_context.Context | None) -> Iterator[None]:
    """Run the block in a context taken from another thread by `current_context`."""
    if ctx is None:
        yield
        return
    token = otel_context.attach(ctx)
    try:
        yield
    finally:
        otel_context.detach(token)


def failed(current: Span, why: str) -> None:
    """Mark a span as an error that raised nothing (a tool that failed, a run that ended)."""
    current.set_status(Status(StatusCode.ERROR, why[:200]))


def flushed(handler: Callable[P, R]) -> Callable[P, R]:
    """A Lambda handler whose spans are exported before it answers (when tracing is on)."""

    @functools.wraps(handler)
    def flushing(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return handler(*args, **kwargs)
        finally:
            flush()

    return flushing

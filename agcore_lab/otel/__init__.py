"""OpenTelemetry export of agcore runs (the optional ``otel`` extra); see :mod:`.tracing`."""

from __future__ import annotations

from agcore_lab.otel.tracing import Instrumentation, instrument

__all__ = ["Instrumentation", "instrument"]

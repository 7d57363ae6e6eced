"""OpenTelemetry spans for agcore runs, with the GenAI semantic conventions.

:func:`instrument` makes the sessions of a manager (or of a :class:`RuntimeBundle`) emit, for
each turn, a span ``invoke_agent <agent>`` with one child span per model call
(``chat <model>``) and per tool call (``execute_tool <tool>``), carrying the GenAI
semantic-convention attributes (``gen_ai.operation.name``, ``gen_ai.request.model``,
``gen_ai.usage.input_tokens``, ``gen_ai.usage.output_tokens``,
``gen_ai.response.finish_reasons``, ``gen_ai.tool.name``, ``gen_ai.conversation.id`` ...)
plus agcore's ids (``agcore.session_id``, ``agcore.call_id``, ``agcore.turn_index``). Any OTLP
collector (Phoenix, Langfuse, Jaeger, an OpenTelemetry Collector) shows them.

Off unless configured: nothing here is imported by ``import agcore_lab``; the ``otel`` extra
installs the SDK (``pip install "agcore_lab[otel]"``, plus an exporter such as
``opentelemetry-exporter-otlp-proto-http``).

How: the spans are built from the model-call records (which carry exact start times and
latencies) when a turn ends, so a turn's hot path does no tracing work; a turn that fails gets
its span, with status ERROR, when its failed call is recorded. Spans need recording on
(``record_calls``, the default).

Example:
    >>> from opentelemetry.sdk.trace import TracerProvider            # doctest: +SKIP
    >>> from opentelemetry.sdk.trace.export import BatchSpanProcessor  # doctest: +SKIP
    >>> from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # doctest: +SKIP
    ...     OTLPSpanExporter)
    >>> provider = TracerProvider()                                    # doctest: +SKIP
    >>> provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))  # doctest: +SKIP
    >>> tracing = instrument(manager, tracer_provider=provider)       # doctest: +SKIP
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from agcore_lab.errors import ConfigurationError
from agcore_lab.llm.call_record import ModelCall

if TYPE_CHECKING:
    from agcore_lab.agent.bundle import RuntimeBundle
    from agcore_lab.agent.events import TurnResult
    from agcore_lab.agent.session import AgentSession
    from agcore_lab.engine.manager import SessionManager

__all__ = ["Instrumentation", "instrument"]

_PARAMS = {
    "temperature": "gen_ai.request.temperature",
    "top_p": "gen_ai.request.top_p",
    "max_tokens": "gen_ai.request.max_tokens",
    "seed": "gen_ai.request.seed",
}


def _ns(moment: datetime) -> int:
    return int(moment.timestamp() * 1_000_000_000)


def _trace_api() -> Any:
    try:
        from opentelemetry import trace
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ConfigurationError(
            'OpenTelemetry is not installed: pip install "agcore_lab[otel]"'
        ) from exc
    return trace


class Instrumentation:
    """The link between one bundle's sessions and a tracer; made by :func:`instrument`.

    Attributes:
        spans_started: How many spans this instrumentation has started.
    """

    def __init__(
        self, bundle: RuntimeBundle, tracer_provider: Any = None, *, capture_content: bool = False
    ) -> None:
        trace = _trace_api()
        self._trace = trace
        provider = tracer_provider or trace.get_tracer_provider()
        self._tracer = provider.get_tracer("agcore_lab")
        self._bundle = bundle
        self._capture = capture_content
        self._lock = threading.Lock()
        self._pending: dict[str, list[ModelCall]] = {}
        self._agents: dict[str, str] = {}
        self.spans_started = 0
        bundle.call_listeners.append(self._on_call)
        bundle.hooks.append(self._on_turn)

    def uninstrument(self) -> None:
        """Stop emitting spans for the bundle's sessions."""
        if self._on_call in self._bundle.call_listeners:
            self._bundle.call_listeners.remove(self._on_call)
        if self._on_turn in self._bundle.hooks:
            self._bundle.hooks.remove(self._on_turn)

    # -- collecting ---------------------------------------------------------------------------

    def _on_call(self, call: ModelCall) -> None:
        with self._lock:
            self._pending.setdefault(call.session_id, []).append(call)
        if call.status == "error" and call.kind == "turn":
            # The turn fails with this call: it will never reach the turn-end hook.
            self._emit_turn(call.session_id, None, None, error=call.error)

    def _on_turn(self, session: AgentSession, result: TurnResult) -> None:
        self._agents[session.session_id] = session.agent.name
        self._emit_turn(session.session_id, session.agent.name, result, error=None)

    # -- emitting -----------------------------------------------------------------------------

    def _span(self, name: str, start: int, attributes: dict[str, Any], context: Any) -> Any:
        self.spans_started += 1
        return self._tracer.start_span(
            name,
            context=context,
            kind=self._trace.SpanKind.CLIENT
            if name.startswith("chat")
            else self._trace.SpanKind.INTERNAL,
            start_time=start,
            attributes={k: v for k, v in attributes.items() if v is not None},
        )

    def _emit_turn(
        self,
        session_id: str,
        agent_name: str | None,
        result: TurnResult | None,
        *,
        error: str | None,
    ) -> None:
        with self._lock:
            calls = self._pending.pop(session_id, [])
        if not calls and result is None:
            return
        agent_name = agent_name or self._agents.get(session_id) or self._agent_of(session_id)
        start = _ns(result.messages[0].created_at) if result and result.messages else None
        if calls:
            first = _ns(calls[0].started_at)
            start = first if start is None else min(start, first)
        assert start is not None
        prompt = sum(c.usage.prompt_tokens for c in calls)
        completion = sum(c.usage.completion_tokens for c in calls)
        turn = self._span(
            f"invoke_agent {agent_name}",
            start,
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": agent_name,
                "gen_ai.conversation.id": session_id,
                "gen_ai.usage.input_tokens": prompt,
                "gen_ai.usage.output_tokens": completion,
                "agcore.session_id": session_id,
                "agcore.turn_index": result.turn_index if result else calls[0].turn_index,
                "agcore.slot_id": result.slot_id if result else calls[0].slot_id,
                "agcore.turn_status": result.status if result else "error",
                "agcore.cost_usd": sum(c.cost for c in calls),
            },
            None,
        )
        context = self._trace.set_span_in_context(turn)
        end = start
        for call in calls:
            end = max(end, self._emit_call(call, context))
        if result is not None:
            end = max(end, self._emit_tools(calls, result, context))
        if error is not None:
            turn.set_status(self._trace.Status(self._trace.StatusCode.ERROR, error))
            turn.set_attribute("error.type", error.split(":", 1)[0])
        turn.end(end_time=max(end, self._now()))

    def _agent_of(self, session_id: str) -> str:
        record = self._bundle.store.get_session(session_id)
        name = record.agent_name if record is not None else "agent"
        self._agents[session_id] = name
        return name

    @staticmethod
    def _now() -> int:
        import time

        return time.time_ns()

    def _emit_call(self, call: ModelCall, context: Any) -> int:
        start = _ns(call.started_at)
        end = start + int(call.latency_s * 1_000_000_000)
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "agcore_lab",
            "gen_ai.request.model": call.model,
            "gen_ai.response.model": call.model,
            "gen_ai.usage.input_tokens": call.usage.prompt_tokens,
            "gen_ai.usage.output_tokens": call.usage.completion_tokens,
            "gen_ai.response.finish_reasons": [call.finish_reason] if call.finish_reason else None,
            "gen_ai.conversation.id": call.session_id,
            "agcore.call_id": call.call_id,
            "agcore.call_kind": call.kind,
            "agcore.request_hash": call.request_hash,
            "agcore.message_count": len(call.request_messages),
            "agcore.cost_usd": call.cost,
            "agcore.streamed": call.streamed,
            "agcore.replayed": call.replayed,
            "agcore.ttft_s": call.ttft_s,
        }
        for key, name in _PARAMS.items():
            value = call.params.get(key)
            if isinstance(value, int | float):
                attributes[name] = value
        if self._capture:
            import json

            from agcore_lab.llm.call_record import wire_form

            attributes["gen_ai.input.messages"] = json.dumps(
                [wire_form(m) for m in call.request_messages]
            )
            if call.response is not None:
                attributes["gen_ai.output.messages"] = json.dumps([wire_form(call.response)])
        span = self._span(f"chat {call.model}", start, attributes, context)
        if call.status == "error":
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, call.error))
            span.set_attribute("error.type", (call.error or "error").split(":", 1)[0])
        span.end(end_time=end)
        return end

    def _emit_tools(self, calls: Sequence[ModelCall], result: TurnResult, context: Any) -> int:
        # A tool runs after the model call that asked for it and ends when its result exists.
        asked_at = {
            tool_call.id: _ns(c.started_at) + int(c.latency_s * 1_000_000_000)
            for c in calls
            if c.response is not None
            for tool_call in c.response.tool_calls
        }
        names = {c.id: c.name for c in result.tool_calls}
        end = 0
        for message in result.tool_results:
            finished = _ns(message.created_at)
            start = min(asked_at.get(message.tool_call_id, finished), finished)
            name = message.name or names.get(message.tool_call_id, "tool")
            span = self._span(
                f"execute_tool {name}",
                start,
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": name,
                    "gen_ai.tool.call.id": message.tool_call_id,
                    "gen_ai.tool.type": "function",
                    "agcore.session_id": result.session_id,
                },
                context,
            )
            if message.is_error:
                span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, message.content))
            span.end(end_time=finished)
            end = max(end, finished)
        return end


def instrument(
    target: SessionManager | RuntimeBundle,
    *,
    tracer_provider: Any = None,
    capture_content: bool = False,
) -> Instrumentation:
    """Emit OpenTelemetry spans for every turn of the sessions of ``target``.

    Args:
        target: A :class:`~agcore_lab.SessionManager` (its bundle) or a
            :class:`~agcore_lab.RuntimeBundle`.
        tracer_provider: The SDK ``TracerProvider``; the global one by default.
        capture_content: Also put the request and response messages on the model-call
            spans (``gen_ai.input.messages`` / ``gen_ai.output.messages``); off by default,
            as they may hold private data.

    Returns:
        The :class:`Instrumentation`; ``.uninstrument()`` stops it.

    Raises:
        ConfigurationError: OpenTelemetry is not installed.
    """
    from agcore_lab.agent.bundle import RuntimeBundle

    bundle = target if isinstance(target, RuntimeBundle) else target.bundle
    return Instrumentation(bundle, tracer_provider, capture_content=capture_content)

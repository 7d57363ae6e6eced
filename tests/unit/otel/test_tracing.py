"""OpenTelemetry spans: the SDK's in-memory exporter, and OTLP/HTTP to a loopback receiver."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from agcore_lab import Agent, ModelError, ScriptedModel, SessionManager, SqliteStore, ToolCall
from agcore_lab.llm.base import ChatResponse, ToolSpec
from agcore_lab.llm.messages import Message
from agcore_lab.otel import instrument


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def manager(exporter: InMemorySpanExporter) -> Iterator[SessionManager]:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    manager = SessionManager(SqliteStore(":memory:"))
    tracing = instrument(manager, tracer_provider=provider)
    yield manager
    tracing.uninstrument()


def _by_name(spans: Sequence[ReadableSpan]) -> dict[str, ReadableSpan]:
    return {s.name: s for s in spans}


def test_a_turn_is_a_span_with_model_and_tool_children(
    manager: SessionManager, exporter: InMemorySpanExporter
) -> None:
    model = ScriptedModel([ToolCall(name="add", arguments={"a": 2, "b": 3}), "5"])
    sid = manager.create_sync(
        Agent(name="calc", system_prompt="You add.", model=model, tools=[add])
    )
    manager.submit_turn_sync(sid, "2 + 3?")
    spans = exporter.get_finished_spans()
    names = [s.name for s in spans]
    assert sorted(names) == sorted(
        ["chat scripted", "chat scripted", "execute_tool add", "invoke_agent calc"]
    )
    turn = _by_name(spans)["invoke_agent calc"]
    assert turn.parent is None
    assert all(
        s.parent is not None and s.parent.span_id == turn.context.span_id
        for s in spans
        if s is not turn
    )
    assert all(s.context.trace_id == turn.context.trace_id for s in spans)
    calls = manager.model_calls_sync(sid)
    chats = [s for s in spans if s.name == "chat scripted"]
    chats.sort(key=lambda s: s.start_time or 0)
    first = dict(chats[0].attributes or {})
    assert first["gen_ai.operation.name"] == "chat"
    assert first["gen_ai.request.model"] == "scripted"
    assert first["gen_ai.usage.input_tokens"] == calls[0].usage.prompt_tokens
    assert first["gen_ai.usage.output_tokens"] == calls[0].usage.completion_tokens
    assert first["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert first["agcore.call_id"] == calls[0].call_id
    tool = dict(_by_name(spans)["execute_tool add"].attributes or {})
    assert tool["gen_ai.operation.name"] == "execute_tool" and tool["gen_ai.tool.name"] == "add"
    attrs = dict(turn.attributes or {})
    assert attrs["gen_ai.operation.name"] == "invoke_agent"
    assert attrs["gen_ai.conversation.id"] == sid and attrs["agcore.turn_index"] == 1
    assert attrs["gen_ai.usage.input_tokens"] == sum(c.usage.prompt_tokens for c in calls)
    # Children lie inside the turn, in order: model call, tool, model call.
    ordered = sorted((s for s in spans if s is not turn), key=lambda s: s.start_time or 0)
    assert [s.name for s in ordered] == ["chat scripted", "execute_tool add", "chat scripted"]
    assert turn.start_time <= ordered[0].start_time and ordered[-1].end_time <= turn.end_time


class _Down:
    model_name = "down"

    async def complete(
        self, messages: Sequence[Message], *, tools: Sequence[ToolSpec] = ()
    ) -> ChatResponse:
        raise ModelError("the backend is down")

    def stream(self, messages: Sequence[Message], *, tools: Sequence[ToolSpec] = ()) -> Any:
        raise NotImplementedError


def test_a_failed_turn_is_an_error_span(
    manager: SessionManager, exporter: InMemorySpanExporter
) -> None:
    sid = manager.create_sync(Agent(name="down", model=_Down()))
    with pytest.raises(ModelError):
        manager.submit_turn_sync(sid, "hi")
    spans = _by_name(exporter.get_finished_spans())
    assert spans["chat down"].status.status_code is StatusCode.ERROR
    assert spans["invoke_agent down"].status.status_code is StatusCode.ERROR
    assert dict(spans["chat down"].attributes or {})["error.type"] == "ModelError"


def test_uninstrument_stops_the_spans(exporter: InMemorySpanExporter) -> None:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    manager = SessionManager(SqliteStore(":memory:"))
    tracing = instrument(manager, tracer_provider=provider)
    sid = manager.create_sync(Agent(name="a", model=ScriptedModel()))
    manager.submit_turn_sync(sid, "one")
    tracing.uninstrument()
    manager.submit_turn_sync(sid, "two")
    assert [s.name for s in exporter.get_finished_spans()] == ["chat scripted", "invoke_agent a"]


class _Receiver(BaseHTTPRequestHandler):
    bodies: list[tuple[str, bytes]] = []

    def do_POST(self) -> None:
        length = int(self.headers["Content-Length"])
        _Receiver.bodies.append((self.path, self.rfile.read(length)))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def test_spans_reach_an_otlp_http_collector() -> None:
    exporter_mod = pytest.importorskip("opentelemetry.exporter.otlp.proto.http.trace_exporter")
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    server = HTTPServer(("127.0.0.1", 0), _Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        endpoint = f"http://127.0.0.1:{server.server_port}/v1/traces"
        provider = TracerProvider()
        provider.add_span_processor(
            SimpleSpanProcessor(exporter_mod.OTLPSpanExporter(endpoint=endpoint))
        )
        manager = SessionManager(SqliteStore(":memory:"))
        instrument(manager, tracer_provider=provider)
        sid = manager.create_sync(Agent(name="remote", model=ScriptedModel(["hello"])))
        manager.submit_turn_sync(sid, "hi")
        provider.force_flush()
        provider.shutdown()
    finally:
        server.shutdown()
    assert _Receiver.bodies and all(path == "/v1/traces" for path, _ in _Receiver.bodies)
    spans = []
    for _, body in _Receiver.bodies:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                assert scope.scope.name == "agcore_lab"
                spans.extend(scope.spans)
    by_name = {s.name: s for s in spans}
    assert set(by_name) == {"invoke_agent remote", "chat scripted"}
    chat = {a.key: a.value for a in by_name["chat scripted"].attributes}
    assert chat["gen_ai.request.model"].string_value == "scripted"
    assert chat["gen_ai.usage.output_tokens"].int_value > 0
    assert by_name["chat scripted"].parent_span_id == by_name["invoke_agent remote"].span_id


def test_import_agcore_lab_does_not_import_opentelemetry() -> None:
    code = (
        "import agcore_lab, sys; assert not any(m.startswith('opentelemetry') for m in sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_async_turns_are_traced_too(
    manager: SessionManager, exporter: InMemorySpanExporter
) -> None:
    async def run() -> None:
        sid = await manager.create(Agent(name="aio", model=ScriptedModel()))
        await asyncio.gather(*(manager.submit_turn(sid, f"t{i}") for i in range(2)))

    asyncio.run(run())
    turns = [s for s in exporter.get_finished_spans() if s.name == "invoke_agent aio"]
    assert sorted(dict(s.attributes or {})["agcore.turn_index"] for s in turns) == [1, 2]

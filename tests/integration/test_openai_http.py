"""OpenAIChatModel against a real HTTP server on 127.0.0.1 (the ``openai_server`` fixture).

No httpx mocks: every test goes over a socket, so connection reuse, timeouts, cut-off streams
and refused connections behave as they would against a real endpoint.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest

from agcore_lab.aio import run_sync
from agcore_lab.errors import (
    InvalidInputError,
    ModelConnectionError,
    ModelHTTPError,
    ModelProtocolError,
    ModelTimeoutError,
)
from agcore_lab.llm.base import ChatModel, ResponseDone, TextDelta, ToolCallDelta, ToolSpec
from agcore_lab.llm.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
    messages_to_openai,
)
from agcore_lab.llm.openai import OpenAIChatModel

pytestmark = pytest.mark.timeout(20)

KEY = "sk-test-Zq8xSecretKey0123456789"
HELLO: list[Message] = [UserMessage(content="Hello")]
WEATHER = ToolSpec(
    name="get_weather",
    description="Current weather in a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)


def completion(
    content: str | None = "Hello there!",
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    usage: tuple[int, int] | None = (12, 4),
    finish_reason: str = "stop",
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
    }
    if usage:
        body["usage"] = {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": sum(usage),
        }
    return body


def chunk(
    delta: dict[str, Any] | None = None, *, finish_reason: str | None = None
) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish_reason}],
    }


def usage_chunk(prompt: int, completion_tokens: int) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion_tokens},
    }


def call_delta(
    index: int, *, id: str | None = None, name: str | None = None, arguments: str = ""
) -> dict[str, Any]:
    function: dict[str, Any] = {"arguments": arguments}
    if name:
        function["name"] = name
    delta: dict[str, Any] = {"index": index, "function": function}
    if id:
        delta.update(id=id, type="function")
    return {"tool_calls": [delta]}


def make_model(server: Any, **kwargs: Any) -> OpenAIChatModel:
    kwargs.setdefault("api_key", KEY)
    kwargs.setdefault("backoff_base", 0.01)
    return OpenAIChatModel("gpt-4o-mini", base_url=server.url, **kwargs)


def complete(model: OpenAIChatModel, messages: list[Message] = HELLO, **kwargs: Any) -> Any:
    async def main() -> Any:
        async with model:
            return await model.complete(messages, **kwargs)

    return asyncio.run(main())


def stream(model: OpenAIChatModel, messages: list[Message] = HELLO, **kwargs: Any) -> list[Any]:
    """All events of one stream; on an error, the events so far are in ``error.events``."""
    events: list[Any] = []

    async def main() -> None:
        async with model:
            async for event in model.stream(messages, **kwargs):
                events.append(event)

    try:
        asyncio.run(main())
    except Exception as exc:
        exc.events = events  # type: ignore[attr-defined]
        raise
    return events


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# --- complete() ----------------------------------------------------------------------------


def test_complete_plain_text(openai_server: Any) -> None:
    openai_server.add_json(200, completion("Hello there!"))
    model = make_model(openai_server)

    response = complete(model)

    assert isinstance(model, ChatModel)
    assert response.message.content == "Hello there!"
    assert response.message.tool_calls == ()
    assert response.usage.prompt_tokens == 12
    assert response.usage.completion_tokens == 4
    assert response.usage.requests == 1
    assert response.model == "gpt-4o-mini-2024-07-18"
    assert response.finish_reason == "stop"
    [request] = openai_server.requests
    assert request.path == "/v1/chat/completions"
    assert request.body == {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "Hello"}],
    }


def test_complete_tool_calls_and_request_body(openai_server: Any) -> None:
    wire_calls = [
        {
            "id": "call_a",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
        },
        {"id": "call_b", "type": "function", "function": {"name": "get_weather", "arguments": ""}},
    ]
    openai_server.add_json(200, completion(None, tool_calls=wire_calls, finish_reason="tool_calls"))
    history: list[Message] = [
        SystemMessage(content="Be brief."),
        UserMessage(content="Weather in Oslo?"),
        AssistantMessage(tool_calls=(ToolCall(id="call_0", name="get_weather", arguments={}),)),
        ToolMessage(content="sunny", tool_call_id="call_0"),
        UserMessage(content="And Paris?"),
    ]
    model = make_model(openai_server, extra_body={"temperature": 0, "model": "ignored"})

    response = complete(model, history, tools=[WEATHER])

    assert response.message.content is None
    assert response.message.tool_calls == (
        ToolCall(id="call_a", name="get_weather", arguments={"city": "Paris"}),
        ToolCall(id="call_b", name="get_weather", arguments={}),
    )
    assert response.finish_reason == "tool_calls"
    body = openai_server.requests[0].body
    assert body["model"] == "gpt-4o-mini"  # extra_body cannot override the model
    assert body["messages"] == messages_to_openai(history)
    assert body["tools"] == [WEATHER.to_openai()]
    assert body["temperature"] == 0
    assert "stream" not in body


def test_complete_malformed_tool_arguments_is_protocol_error(openai_server: Any) -> None:
    bad = [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{oops"}}]
    openai_server.add_json(200, completion(None, tool_calls=bad))

    with pytest.raises(ModelProtocolError, match="not valid JSON") as info:
        complete(make_model(openai_server))
    assert info.value.__cause__ is not None


def test_complete_without_usage_estimates_it(openai_server: Any) -> None:
    openai_server.add_json(200, completion("four words right here", usage=None))

    response = complete(make_model(openai_server))

    assert response.usage.requests == 1
    assert response.usage.prompt_tokens > 0
    assert response.usage.completion_tokens == 6  # 21 characters / 4, rounded up


def test_authorization_header_sent_when_key_set_and_absent_otherwise(
    openai_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    for _ in range(3):
        openai_server.add_json(200, completion())

    complete(make_model(openai_server, api_key=KEY))
    complete(make_model(openai_server, api_key=None))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    complete(make_model(openai_server, api_key=None))

    with_key, without_key, from_env = (r.headers for r in openai_server.requests)
    assert with_key["authorization"] == f"Bearer {KEY}"
    assert "authorization" not in without_key
    assert from_env["authorization"] == "Bearer sk-from-env"


def test_http_error_without_retry_for_400(openai_server: Any) -> None:
    openai_server.add_json(400, {"error": {"message": "unknown parameter 'foo'"}})

    with pytest.raises(ModelHTTPError, match="HTTP 400: unknown parameter 'foo'") as info:
        complete(make_model(openai_server))

    assert info.value.status_code == 400
    assert len(openai_server.requests) == 1


def test_invalid_settings_are_rejected() -> None:
    with pytest.raises(InvalidInputError, match="base_url"):
        OpenAIChatModel(base_url="localhost:11434/v1")
    with pytest.raises(InvalidInputError, match="timeout"):
        OpenAIChatModel(timeout=0)


# --- stream() ------------------------------------------------------------------------------


def test_stream_text_deltas_and_usage(openai_server: Any) -> None:
    openai_server.add_sse(
        [
            chunk({"role": "assistant", "content": ""}),
            chunk({"content": "Hel"}),
            chunk({"content": "lo ✓"}),
            chunk(finish_reason="stop"),
            usage_chunk(9, 3),
        ]
    )

    events = stream(make_model(openai_server))

    assert events[:-1] == [TextDelta(text="Hel"), TextDelta(text="lo ✓")]
    assert [type(e) for e in events].count(ResponseDone) == 1
    done = events[-1]
    assert isinstance(done, ResponseDone)
    assert done.response.message.content == "Hello ✓"
    assert (done.response.usage.prompt_tokens, done.response.usage.completion_tokens) == (9, 3)
    assert done.response.usage.requests == 1
    assert done.response.finish_reason == "stop"
    request = openai_server.requests[0]
    assert request.body["stream"] is True
    assert request.body["stream_options"] == {"include_usage": True}
    assert request.headers["accept"] == "text/event-stream"


def test_stream_tool_call_deltas_assembled(openai_server: Any) -> None:
    openai_server.add_sse(
        [
            chunk({"role": "assistant", "content": None}),
            chunk(call_delta(0, id="call_a", name="get_weather")),
            chunk(call_delta(0, arguments='{"ci')),
            chunk(call_delta(1, id="call_b", name="get_weather", arguments='{"city"')),
            chunk(call_delta(0, arguments='ty": "Paris"}')),
            chunk(call_delta(1, arguments=': "Oslo"}')),
            chunk(finish_reason="tool_calls"),
        ]  # no usage chunk: the model estimates it
    )

    events = stream(make_model(openai_server), tools=[WEATHER])

    deltas = [e for e in events if isinstance(e, ToolCallDelta)]
    assert deltas[0] == ToolCallDelta(index=0, id="call_a", name="get_weather", arguments="")
    assert [d.index for d in deltas] == [0, 0, 1, 0, 1]
    assert "".join(d.arguments for d in deltas if d.index == 0) == '{"city": "Paris"}'
    done = events[-1]
    assert isinstance(done, ResponseDone)
    assert done.response.message.tool_calls == (
        ToolCall(id="call_a", name="get_weather", arguments={"city": "Paris"}),
        ToolCall(id="call_b", name="get_weather", arguments={"city": "Oslo"}),
    )
    assert done.response.finish_reason == "tool_calls"
    usage = done.response.usage
    assert usage.requests == 1 and usage.prompt_tokens > 0 and usage.completion_tokens > 0
    assert openai_server.requests[0].body["tools"] == [WEATHER.to_openai()]


def test_stream_tool_call_arguments_not_json(openai_server: Any) -> None:
    openai_server.add_sse(
        [
            chunk(call_delta(0, id="call_a", name="get_weather", arguments='{"city": ')),
            chunk(finish_reason="tool_calls"),
        ]
    )

    with pytest.raises(ModelProtocolError, match="not valid JSON"):
        stream(make_model(openai_server))


@pytest.mark.parametrize("chunked", [True, False], ids=["chunked", "close-delimited"])
def test_stream_cut_off_mid_event(openai_server: Any, chunked: bool) -> None:
    openai_server.add_cut_stream(
        [chunk({"content": "Hel"})], b'data: {"id": "chatcmpl-1", "choi', chunked=chunked
    )

    started = time.monotonic()
    with pytest.raises(
        ModelProtocolError, match=r"cut off|ended in the middle of an event"
    ) as info:
        stream(make_model(openai_server))

    assert time.monotonic() - started < 5
    assert "[DONE]" in str(info.value)
    assert info.value.events == [TextDelta(text="Hel")]  # type: ignore[attr-defined]
    assert len(openai_server.requests) == 1  # no retry once events were yielded


def test_stream_ending_without_done(openai_server: Any) -> None:
    openai_server.add_sse([chunk({"content": "Hel"})], done=False)

    with pytest.raises(ModelProtocolError, match=r"ended without the closing 'data: \[DONE\]'"):
        stream(make_model(openai_server))


def test_stream_malformed_json_chunk(openai_server: Any) -> None:
    openai_server.add_sse([chunk({"content": "ok"}), '{"choices": [{"delta": '], raw_events=True)

    with pytest.raises(ModelProtocolError, match="not valid JSON"):
        stream(make_model(openai_server))


def test_stream_retries_before_first_event(openai_server: Any) -> None:
    openai_server.add_json(503, {"error": {"message": "overloaded"}})
    openai_server.add_sse([chunk({"content": "hi"}), usage_chunk(1, 1)])

    events = stream(make_model(openai_server))

    assert events[0] == TextDelta(text="hi")
    assert len(openai_server.requests) == 2


def test_stream_abandoned_early_then_reused(openai_server: Any) -> None:
    openai_server.add_sse([chunk({"content": "a"}), chunk({"content": "b"})])
    openai_server.add_json(200, completion("again"))
    model = make_model(openai_server)

    async def main() -> str | None:
        async with model:
            async for event in model.stream(HELLO):
                assert event == TextDelta(text="a")
                break
            return (await model.complete(HELLO)).message.content

    assert asyncio.run(main()) == "again"


# --- retries and errors ----------------------------------------------------------------------


def test_429_with_retry_after_zero_then_success(openai_server: Any) -> None:
    openai_server.add_json(429, {"error": {"message": "slow down"}}, headers={"Retry-After": "0"})
    openai_server.add_json(200, completion("finally"))
    # A backoff of 5 s would blow the time check below: Retry-After must win.
    model = make_model(openai_server, backoff_base=5.0)

    started = time.monotonic()
    response = complete(model)

    assert response.message.content == "finally"
    assert len(openai_server.requests) == 2
    assert time.monotonic() - started < 2


def test_retry_after_http_date(openai_server: Any) -> None:
    past = format_datetime(datetime.now(UTC) - timedelta(seconds=30), usegmt=True)
    openai_server.add_json(503, "busy", headers={"Retry-After": past})
    openai_server.add_json(200, completion())

    started = time.monotonic()
    complete(make_model(openai_server, backoff_base=5.0))

    assert len(openai_server.requests) == 2
    assert time.monotonic() - started < 2


def test_500_on_every_attempt(openai_server: Any) -> None:
    openai_server.add_json(500, "upstream exploded: kaboom", always=True)

    with pytest.raises(ModelHTTPError) as info:
        complete(make_model(openai_server, max_retries=2))

    error = info.value
    assert error.status_code == 500
    assert error.body == "upstream exploded: kaboom"
    assert "chat completions returned HTTP 500" in str(error)
    assert "kaboom" in str(error)
    assert len(openai_server.requests) == 3  # max_retries + 1


def test_read_timeout(openai_server: Any) -> None:
    openai_server.add_json(200, completion(), delay=5.0)

    started = time.monotonic()
    with pytest.raises(ModelTimeoutError, match="did not answer within 0.3s"):
        complete(make_model(openai_server, timeout=0.3))

    assert time.monotonic() - started < 2
    assert len(openai_server.requests) == 1  # read timeouts are not retried


def test_connection_refused(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="agcore_lab.llm.openai")
    model = OpenAIChatModel(
        base_url=f"http://127.0.0.1:{closed_port()}/v1",
        api_key=KEY,
        max_retries=2,
        backoff_base=0.01,
    )

    started = time.monotonic()
    with pytest.raises(ModelConnectionError, match="after 3 attempt"):
        complete(model)

    assert time.monotonic() - started < 5
    retries = [r for r in caplog.records if "retry" in r.getMessage()]
    assert len(retries) == 2


# --- the API key stays secret ------------------------------------------------------------------


def test_api_key_never_in_repr_errors_or_logs(
    openai_server: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)  # root: httpx and httpcore debug logs too
    openai_server.add_json(200, completion())
    openai_server.add_json(401, {"error": {"message": "Incorrect API key provided"}})
    model = make_model(openai_server)

    assert KEY not in repr(model) and KEY not in str(model)
    assert "api_key='***'" in repr(model)
    complete(model)
    with pytest.raises(ModelHTTPError) as info:
        complete(model)

    error = info.value
    assert error.status_code == 401
    assert "check the API key" in str(error)
    for text in (str(error), repr(error), error.body, str(error.context)):
        assert KEY not in text
    assert caplog.records, "expected debug logs from the model and httpx"
    assert KEY not in caplog.text
    for record in caplog.records:
        assert KEY not in record.getMessage()
    # ...and yet it was sent.
    assert openai_server.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_api_key_echoed_by_server_is_redacted(openai_server: Any) -> None:
    openai_server.add_json(403, {"error": {"message": f"key {KEY} is not allowed"}})

    with pytest.raises(ModelHTTPError) as info:
        complete(make_model(openai_server))

    assert KEY not in str(info.value)
    assert KEY not in info.value.body
    assert "***" in info.value.body


# --- the sync bridge and event loops ----------------------------------------------------------


def test_sync_bridge_reuses_connection_and_other_loop_gets_its_own(openai_server: Any) -> None:
    for text in ("one", "two", "three", "four"):
        openai_server.add_json(200, completion(text))
    model = make_model(openai_server)

    async def on_own_loop() -> Any:
        response = await model.complete(HELLO)  # another loop: a client of its own
        await model.aclose()  # closes this loop's client and, on its loop, the bridge's
        return response

    first = run_sync(model.complete(HELLO))
    second = run_sync(model.complete(HELLO))
    third = asyncio.run(on_own_loop())
    fourth = run_sync(model.complete(HELLO))
    run_sync(model.aclose())

    texts = [r.message.content for r in (first, second, third, fourth)]
    assert texts == ["one", "two", "three", "four"]
    ports = [r.client_port for r in openai_server.requests]
    assert ports[0] == ports[1]  # one pooled connection on the bridge loop
    assert ports[2] != ports[0]
    assert ports[3] not in (ports[0], ports[2])  # aclose() closed the bridge loop's client too

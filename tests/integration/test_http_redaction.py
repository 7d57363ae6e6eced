"""Defect 5: no API key in any error, whatever a misbehaving 127.0.0.1 server sends back.

The server echoes the request's ``Authorization`` header into every answer, on every error
path of the chat client (one-shot and streamed) and of the embeddings client; each error, its
context, the errors chained behind it and every log line must show ``***`` instead. Also:
``base_url`` with a query string (Azure's ``?api-version=``) builds the right URL, and a key in
that query string never reaches httpx's log.
"""

from __future__ import annotations

import asyncio
import json
import logging
import traceback
from collections.abc import Callable
from typing import Any

import pytest

from agcore_lab.errors import AgcoreError, ModelError, ModelHTTPError, ModelProtocolError
from agcore_lab.llm.messages import UserMessage
from agcore_lab.llm.openai import OpenAIChatModel
from agcore_lab.rag import OpenAIEmbedding

KEY = "sk-test-SECRET-4f9a2c7e1b"
HELLO = [UserMessage(content="hi")]


def _echo_json(status: int, make: Callable[[str], Any]) -> Callable[[Any], None]:
    def behaviour(handler: Any) -> None:
        auth = handler.headers.get("Authorization", "")
        body = make(auth)
        payload = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        handler.send_head(
            status, {"Content-Type": "application/json", "Content-Length": str(len(payload))}
        )
        handler.wfile.write(payload)
        handler.wfile.flush()

    return behaviour


def _echo_sse(make: Callable[[str], list[str]]) -> Callable[[Any], None]:
    def behaviour(handler: Any) -> None:
        auth = handler.headers.get("Authorization", "")
        handler.send_head(
            200, {"Content-Type": "text/event-stream", "Transfer-Encoding": "chunked"}
        )
        for data in make(auth):
            handler.write_chunk(f"data: {data}\n\n".encode())
        handler.write_chunk(b"data: [DONE]\n\n")
        handler.write_chunk(b"")

    return behaviour


def _assert_clean(error: BaseException, caplog: pytest.LogCaptureFixture) -> None:
    assert isinstance(error, AgcoreError)
    text = "".join(traceback.format_exception(error))
    assert KEY not in text, text
    assert KEY not in repr(error) and KEY not in str(error.context)
    if isinstance(error, ModelHTTPError):
        assert KEY not in error.body
    chained: BaseException | None = error
    while chained is not None:
        assert KEY not in str(chained) and KEY not in repr(chained.args)
        assert KEY not in str(getattr(chained, "doc", ""))
        chained = chained.__cause__ or chained.__context__
    assert KEY not in caplog.text
    assert "***" in str(error) or "***" in getattr(error, "body", "")


CHAT_CASES: dict[str, Callable[[Any], None]] = {
    "200 not JSON": _echo_json(200, lambda auth: f"<html>oops {auth}</html>"),
    "200 without choices": _echo_json(200, lambda auth: {"echo": auth}),
    "200 bad content": _echo_json(
        200, lambda auth: {"choices": [{"message": {"content": {"auth": auth}}}]}
    ),
    "200 bad tool call": _echo_json(
        200,
        lambda auth: {"choices": [{"message": {"content": None, "tool_calls": [auth]}}]},
    ),
    "400": _echo_json(400, lambda auth: {"error": {"message": f"bad header {auth}"}}),
    "401 text": _echo_json(401, lambda auth: f"denied: {auth}"),
}

STREAM_CASES: dict[str, Callable[[Any], None]] = {
    "chunk not JSON": _echo_sse(lambda auth: [f"{{not json {auth}"]),
    "chunk not an object": _echo_sse(lambda auth: [json.dumps([auth])]),
    "error chunk": _echo_sse(lambda auth: [json.dumps({"error": {"message": auth}})]),
    "bad delta": _echo_sse(lambda auth: [json.dumps({"choices": [{"delta": auth}]})]),
    "bad tool delta": _echo_sse(
        lambda auth: [json.dumps({"choices": [{"delta": {"tool_calls": [auth]}}]})]
    ),
    "401 on a stream": _echo_json(401, lambda auth: {"error": f"no: {auth}"}),
}

EMBED_CASES: dict[str, Callable[[Any], None]] = {
    "200 not JSON": _echo_json(200, lambda auth: f"oops {auth}"),
    "400": _echo_json(400, lambda auth: {"error": {"message": auth}}),
    "403 text": _echo_json(403, lambda auth: f"forbidden {auth}"),
}


def _chat(server: Any, **kwargs: Any) -> OpenAIChatModel:
    return OpenAIChatModel("m", base_url=server.url, api_key=KEY, max_retries=0, **kwargs)


@pytest.mark.parametrize("case", sorted(CHAT_CASES))
def test_chat_errors_never_show_the_key(
    openai_server: Any, caplog: pytest.LogCaptureFixture, case: str
) -> None:
    openai_server.add(CHAT_CASES[case])
    caplog.set_level(logging.DEBUG)

    async def ask() -> None:
        async with _chat(openai_server) as model:
            await model.complete(HELLO)

    with pytest.raises(ModelError) as caught:
        asyncio.run(ask())
    assert openai_server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    _assert_clean(caught.value, caplog)


@pytest.mark.parametrize("case", sorted(STREAM_CASES))
def test_stream_errors_never_show_the_key(
    openai_server: Any, caplog: pytest.LogCaptureFixture, case: str
) -> None:
    openai_server.add(STREAM_CASES[case])
    caplog.set_level(logging.DEBUG)

    async def drain() -> None:
        async with _chat(openai_server) as model:
            async for _ in model.stream(HELLO):
                pass

    with pytest.raises(ModelError) as caught:
        asyncio.run(drain())
    _assert_clean(caught.value, caplog)


@pytest.mark.parametrize("case", sorted(EMBED_CASES))
def test_embedding_errors_never_show_the_key(
    openai_server: Any, caplog: pytest.LogCaptureFixture, case: str
) -> None:
    openai_server.add(EMBED_CASES[case])
    caplog.set_level(logging.DEBUG)
    embedding = OpenAIEmbedding("e", base_url=openai_server.url, api_key=KEY, dim=3, max_retries=0)
    with embedding, pytest.raises(ModelError) as caught:
        embedding.embed(["hello"])
    assert openai_server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    _assert_clean(caught.value, caplog)


def test_a_non_json_body_is_a_protocol_error(openai_server: Any) -> None:
    openai_server.add(CHAT_CASES["200 not JSON"])
    with pytest.raises(ModelProtocolError, match="not JSON"):
        asyncio.run(_chat(openai_server).complete(HELLO))


def _completion(text: str) -> dict[str, Any]:
    return {"choices": [{"message": {"role": "assistant", "content": text}}]}


def test_a_base_url_with_a_query_string_builds_the_right_url(openai_server: Any) -> None:
    openai_server.add_json(200, _completion("hello"))
    openai_server.add_json(200, {"data": [{"index": 0, "embedding": [1.0, 0.0, 0.0]}]})
    base = f"{openai_server.url}?api-version=2024-06-01"
    reply = asyncio.run(_chat(openai_server).__class__("m", base_url=base).complete(HELLO))
    assert reply.message.content == "hello"
    OpenAIEmbedding("e", base_url=base + "&x=1", dim=3).embed(["hi"])
    paths = [r.path for r in openai_server.requests]
    assert paths == [
        "/v1/chat/completions?api-version=2024-06-01",
        "/v1/embeddings?api-version=2024-06-01&x=1",
    ]


def test_a_key_in_the_query_string_never_reaches_httpx_log(
    openai_server: Any, caplog: pytest.LogCaptureFixture
) -> None:
    openai_server.add_json(200, _completion("hello"))
    openai_server.add_json(200, {"data": [{"index": 0, "embedding": [1.0, 0.0, 0.0]}]})
    openai_server.add_json(401, {"error": "bad key"})
    caplog.set_level(logging.DEBUG)
    base = f"{openai_server.url}?api-version=2024-06-01&api-key={KEY}"
    model = OpenAIChatModel("m", base_url=base, max_retries=0)
    assert asyncio.run(model.complete(HELLO)).message.content == "hello"
    OpenAIEmbedding("e", base_url=base, dim=3).embed(["hi"])
    with pytest.raises(ModelHTTPError) as caught:
        asyncio.run(model.complete(HELLO))
    assert openai_server.requests[0].path.endswith(f"api-key={KEY}")  # it was sent
    httpx_lines = [r.getMessage() for r in caplog.records if r.name == "httpx"]
    assert httpx_lines and all(KEY not in line for line in httpx_lines)
    assert any("api-key=***" in line for line in httpx_lines)
    assert KEY not in caplog.text and KEY not in repr(model)
    _assert_clean_error = "".join(traceback.format_exception(caught.value))
    assert KEY not in _assert_clean_error


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"base_url": "http://"}, "no host"),
        ({"base_url": "ftp://x"}, "http"),
        ({"timeout": float("nan")}, "timeout"),
        ({"timeout": float("inf")}, "timeout"),
        ({"timeout": 0}, "timeout"),
        ({"max_retries": 1.5}, "max_retries"),
        ({"backoff_base": float("nan")}, "backoff_base"),
    ],
)
def test_impossible_client_settings_are_refused(kwargs: dict[str, Any], match: str) -> None:
    from agcore_lab.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match=match):
        OpenAIChatModel("m", **kwargs)
    with pytest.raises(InvalidInputError, match=match):
        OpenAIEmbedding("e", **kwargs)

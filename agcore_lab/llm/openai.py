"""``OpenAIChatModel``: any OpenAI-compatible chat-completions endpoint over HTTP.

Works with OpenAI itself and with local servers that speak the same wire format, such as
Ollama (``http://localhost:11434/v1``) and vLLM (``http://localhost:8000/v1``). Requests go
through ``httpx.AsyncClient``; transient failures (HTTP 429/500/502/503/504, refused or timed-out
connections) are retried with exponential backoff, honouring ``Retry-After``. Every failure
surfaces as a :class:`~agcore_lab.errors.ModelError` subclass, and the API key never appears in
``repr()``, log records or error messages.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from contextlib import aclosing
from typing import Any

import httpx
from pydantic import JsonValue, SecretStr

from agcore_lab.errors import ModelProtocolError
from agcore_lab.llm.base import (
    ChatResponse,
    ModelStreamEvent,
    ResponseDone,
    ToolSpec,
)
from agcore_lab.llm.call_record import note_retry
from agcore_lab.llm.http_errors import HTTPFailures, check_settings, endpoint_url
from agcore_lab.llm.messages import Message, messages_to_openai
from agcore_lab.llm.openai_wire import StreamState, load_chunk, parse_completion
from agcore_lab.llm.retry import RETRY_STATUSES, backoff_delay
from agcore_lab.llm.sse import SSEEvent, SSEParser

__all__ = ["RETRY_STATUSES", "OpenAIChatModel"]

logger = logging.getLogger(__name__)


class OpenAIChatModel:
    """A :class:`~agcore_lab.llm.base.ChatModel` for OpenAI-compatible chat completions.

    Safe to share between threads and event loops: the model keeps one ``httpx.AsyncClient``
    per running event loop, created on first use, so the background loop of
    :mod:`agcore_lab.aio` reuses its connections between calls while a coroutine of your own
    (``asyncio.run``) gets a client of its own. Call :meth:`aclose` (or use ``async with``)
    on your loop before it ends to close that loop's connections.

    Args:
        model: The model name sent to the server.
        base_url: The API root, up to and including ``/v1``.
        api_key: Sent as ``Authorization: Bearer``; defaults to ``$OPENAI_API_KEY``. When
            there is none (or it is ``""``), no Authorization header is sent, as local
            servers expect.
        timeout: Seconds allowed for connecting and for each read or write.
        max_retries: Retries after the first attempt for retryable failures.
        backoff_base: The first retry waits this long; each further retry doubles it.
        backoff_max: The longest wait between attempts, ``Retry-After`` included.
        extra_headers: Headers added to every request.
        extra_body: Fields merged into every request body (``temperature``, ``seed``...).
        transport: An ``httpx.AsyncBaseTransport`` to use instead of the network.

    Raises:
        InvalidInputError: A setting out of range, or a ``base_url`` that is not http(s).

    Example:
        >>> model = OpenAIChatModel("gpt-4o-mini")
        >>> ollama = OpenAIChatModel("llama3.1", base_url="http://localhost:11434/v1")
        >>> vllm = OpenAIChatModel("Qwen/Qwen2.5-7B-Instruct", base_url="http://localhost:8000/v1")
        >>> from agcore_lab.llm.messages import UserMessage
        >>> response = await ollama.complete([UserMessage(content="Hi")])  # doctest: +SKIP
        >>> response.message.content  # doctest: +SKIP
        'Hello! How can I help?'
    """

    def __init__(
        self,
        model: str = "gpt-4o-mini",
        *,
        base_url: str = "https://api.openai.com/v1",
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        backoff_base: float = 0.5,
        backoff_max: float = 20.0,
        extra_headers: Mapping[str, str] | None = None,
        extra_body: Mapping[str, JsonValue] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        check_settings(timeout, max_retries, backoff_base, backoff_max)
        url = endpoint_url(base_url, "/chat/completions")
        self._model = model
        self._base_url = base_url.rstrip("/")
        self._url = url
        key = os.environ.get("OPENAI_API_KEY") if api_key is None else api_key
        self._api_key = SecretStr(key) if key else None
        self._failures = HTTPFailures(
            "chat completions", url, model=model, api_key=self._api_key, timeout=timeout
        )
        # Shown in messages and logs: no user:password@ and no query string.
        self._display_url = self._failures.display_url
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self._extra_headers = dict(extra_headers or {})
        self._extra_body = dict(extra_body or {})
        self._transport = transport
        self._clients: dict[asyncio.AbstractEventLoop, httpx.AsyncClient] = {}
        self._lock = threading.Lock()

    @property
    def model_name(self) -> str:
        """The model name sent to the server."""
        return self._model

    @property
    def request_params(self) -> dict[str, Any]:
        """The parameters merged into every request body (``extra_body``), for call records."""
        return dict(self._extra_body)

    @property
    def base_url(self) -> str:
        """The API root requests go to."""
        return self._base_url

    def __repr__(self) -> str:
        key = "'***'" if self._api_key is not None else "None"
        return (
            f"OpenAIChatModel(model={self._model!r}, "
            f"base_url={self._display_url.removesuffix('/chat/completions')!r}, api_key={key})"
        )

    async def __aenter__(self) -> OpenAIChatModel:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the HTTP clients; the next call opens a new one.

        The client of the calling loop is closed here; clients of other loops that are still
        running are closed on their own loop; those of closed loops are dropped.
        """
        loop = asyncio.get_running_loop()
        with self._lock:
            clients, self._clients = self._clients, {}
        for owner, client in clients.items():
            if owner is loop:
                await client.aclose()
            elif owner.is_running():
                future = asyncio.run_coroutine_threadsafe(client.aclose(), owner)
                await asyncio.wait([asyncio.wrap_future(future)], timeout=5.0)

    async def complete(
        self, messages: Sequence[Message], *, tools: Sequence[ToolSpec] = ()
    ) -> ChatResponse:
        """Answer the conversation in one piece.

        Raises:
            ModelHTTPError: A non-2xx answer (after retries for retryable statuses).
            ModelTimeoutError: The server did not answer within ``timeout``.
            ModelConnectionError: The server could not be reached (after retries).
            ModelProtocolError: An answer that breaks the wire format, including tool-call
                arguments that are not a JSON object.
        """
        response = await self._send(self._body(messages, tools, stream=False), stream=False)
        try:
            raw = await self._read(response)
        finally:
            await response.aclose()
        with self._failures.mapping(reading=True):  # quotes of the body are redacted
            try:
                payload = json.loads(raw)
            except (ValueError, RecursionError) as exc:
                raise self._failures.not_json(raw, exc) from exc
            return parse_completion(payload, messages, tools, default_model=self._model)

    async def stream(
        self, messages: Sequence[Message], *, tools: Sequence[ToolSpec] = ()
    ) -> AsyncIterator[ModelStreamEvent]:
        """Answer the conversation as ``TextDelta`` / ``ToolCallDelta`` events, then one
        ``ResponseDone`` with the assembled message and its usage (estimated when the server
        sends none).

        Retries happen only before the first event. Raises as :meth:`complete` does; a stream
        cut off before ``data: [DONE]`` or carrying malformed JSON is a ``ModelProtocolError``.
        """
        response = await self._send(self._body(messages, tools, stream=True), stream=True)
        state = StreamState(model=self._model)
        try:
            async with aclosing(self._events(response)) as events:
                async for event in events:
                    with self._failures.mapping(reading=True):  # quotes are redacted
                        deltas = state.feed(load_chunk(event.data))
                    for delta in deltas:
                        yield delta
        finally:
            await response.aclose()
        with self._failures.mapping(reading=True):
            done = state.finish(messages, tools)
        yield ResponseDone(response=done)

    def _client(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        with self._lock:
            for stale in [other for other in self._clients if other.is_closed()]:
                del self._clients[stale]  # its loop is gone, so it cannot be closed any more
            client = self._clients.get(loop)
            if client is None or client.is_closed:
                headers = {"User-Agent": "agcore-lab", **self._extra_headers}
                if self._api_key is not None:
                    headers["Authorization"] = f"Bearer {self._api_key.get_secret_value()}"
                client = httpx.AsyncClient(
                    headers=headers, timeout=self.timeout, transport=self._transport
                )
                self._clients[loop] = client
            return client

    def _body(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], *, stream: bool
    ) -> dict[str, Any]:
        body: dict[str, Any] = dict(self._extra_body)
        body["model"] = self._model
        body["messages"] = messages_to_openai(list(messages))
        if tools:
            body["tools"] = [tool.to_openai() for tool in tools]
        if stream:
            body["stream"] = True
            body.setdefault("stream_options", {"include_usage": True})
        else:
            body.pop("stream", None)
            body.pop("stream_options", None)
        return body

    async def _send(self, body: dict[str, Any], *, stream: bool) -> httpx.Response:
        """POST with retries; return a 2xx response whose body is not read yet."""
        client = self._client()
        headers = {"Accept": "text/event-stream" if stream else "application/json"}
        attempt = 0
        while True:
            request = client.build_request("POST", self._url, json=body, headers=headers)
            logger.debug("POST %s model=%s attempt=%d", self._display_url, self._model, attempt + 1)
            try:
                with self._failures.mapping():
                    try:
                        response = await client.send(request, stream=True)
                    except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                        if attempt >= self.max_retries:
                            raise self._failures.connect_error(exc, attempt + 1) from exc
                        raise _Retry(self._failures.describe(exc)) from exc
            except _Retry as retry:
                await self._backoff(attempt, None, f"connection failed: {retry}")
            else:
                if response.is_success:
                    return response
                await self._fail_or_wait(response, attempt)
            attempt += 1

    async def _fail_or_wait(self, response: httpx.Response, attempt: int) -> None:
        try:
            raw = await self._read(response)
        except ModelProtocolError:
            raw = b""
        finally:
            await response.aclose()
        status = response.status_code
        if status in RETRY_STATUSES and attempt < self.max_retries:
            await self._backoff(attempt, response.headers, f"HTTP {status}")
            return
        raise self._failures.status_error(status, raw, attempt + 1)

    async def _backoff(self, attempt: int, headers: httpx.Headers | None, reason: str) -> None:
        delay = backoff_delay(attempt, self.backoff_base, self.backoff_max, headers)
        note_retry()  # the call record counts it
        logger.info(
            "%s: %s; retry %d of %d in %.2fs",
            self._display_url,
            reason,
            attempt + 1,
            self.max_retries,
            delay,
        )
        await asyncio.sleep(delay)

    async def _read(self, response: httpx.Response) -> bytes:
        with self._failures.mapping(reading=True):
            return await response.aread()

    async def _events(self, response: httpx.Response) -> AsyncGenerator[SSEEvent, None]:
        parser = SSEParser()
        try:
            async for chunk in response.aiter_bytes():
                for event in parser.feed(chunk):
                    if event.is_done:
                        return
                    yield event
        except httpx.TimeoutException as exc:
            raise self._failures.timeout_error(exc) from exc
        except httpx.TransportError as exc:
            raise ModelProtocolError(
                "the chat completions stream was cut off before 'data: [DONE]': "
                f"{self._failures.describe(exc)}",
                model=self._model,
            ) from exc
        cut = " in the middle of an event (the connection was closed early)"
        raise ModelProtocolError(
            f"the chat completions stream ended{cut if parser.pending else ''} "
            "without the closing 'data: [DONE]'",
            model=self._model,
        )


class _Retry(Exception):
    """A failed connection attempt that will be retried (internal to ``_send``)."""

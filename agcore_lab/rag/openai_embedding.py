"""``OpenAIEmbedding``: any OpenAI-compatible ``/embeddings`` endpoint, over httpx.

Works with OpenAI and with local servers speaking the same format (Ollama, vLLM, llama.cpp,
LM Studio). Texts are sent in batches; transient failures (HTTP 429/500/502/503/504, refused
or timed-out connections) are retried with exponential backoff, honouring ``Retry-After``.
Failures surface as :class:`~agcore_lab.errors.ModelError` subclasses and never show the key.

httpx is imported when the first client is made, so importing this module stays fast.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import SecretStr

from agcore_lab.errors import ModelProtocolError
from agcore_lab.llm.http_errors import HTTPFailures, check_settings, endpoint_url
from agcore_lab.llm.retry import RETRY_STATUSES, backoff_delay
from agcore_lab.rag._validate import check_count
from agcore_lab.rag.embeddings import Vectors, as_texts, normalize_rows

if TYPE_CHECKING:
    import httpx

__all__ = ["KNOWN_DIMENSIONS", "OpenAIEmbedding"]

logger = logging.getLogger(__name__)

KNOWN_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}


class OpenAIEmbedding:
    """Embeddings from an OpenAI-compatible ``POST {base_url}/embeddings``.

    Args:
        model: The model name sent to the server.
        base_url: The API root, up to and including ``/v1``.
        api_key: Sent as ``Authorization: Bearer``; defaults to ``$OPENAI_API_KEY``; none is
            sent when there is no key (local servers).
        dimensions: Ask the server for vectors of this length (``text-embedding-3-*``).
        dim: The vector length, when the model is not in :data:`KNOWN_DIMENSIONS` and
            ``dimensions`` is not given; otherwise learnt from the first answer.
        batch_size: Texts per request.
        timeout: Seconds allowed for connecting and for each read or write.
        max_retries: Retries after the first attempt for retryable failures.
        backoff_base: The first retry waits this long; each further retry doubles it.
        backoff_max: The longest wait between attempts, ``Retry-After`` included.
        extra_headers: Headers added to every request.
        transport: An ``httpx.BaseTransport`` to use instead of the network.

    Raises:
        InvalidInputError: A setting out of range, or a ``base_url`` that is not http(s).

    Example:
        >>> embedding = OpenAIEmbedding("text-embedding-3-small")
        >>> embedding.dim
        1536
        >>> local = OpenAIEmbedding("nomic-embed-text", base_url="http://localhost:11434/v1")
        >>> local.embed(["hello"]).shape  # doctest: +SKIP
        (1, 768)

    Notes:
        Synchronous (``httpx.Client``) and thread-safe. Empty texts are not sent (servers
        reject them): they get a zero vector. Rows are returned L2-normalized.
    """

    def __init__(
        self,
        model: str = "text-embedding-3-small",
        *,
        base_url: str = "https://api.openai.com/v1",
        api_key: str | None = None,
        dimensions: int | None = None,
        dim: int | None = None,
        batch_size: int = 256,
        timeout: float = 60.0,
        max_retries: int = 3,
        backoff_base: float = 0.5,
        backoff_max: float = 20.0,
        extra_headers: Mapping[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        check_settings(timeout, max_retries, backoff_base, backoff_max)
        check_count(batch_size, "batch_size")
        check_count(dimensions, "dimensions", optional=True)
        check_count(dim, "dim", optional=True)
        url = endpoint_url(base_url, "/embeddings")
        self.model = model
        self.base_url = base_url.rstrip("/")
        self._url = url
        key = os.environ.get("OPENAI_API_KEY") if api_key is None else api_key
        self._api_key = SecretStr(key) if key else None
        self._failures = HTTPFailures(
            "embeddings", url, model=model, api_key=self._api_key, timeout=timeout
        )
        self.dimensions = dimensions
        self._dim = dimensions or dim or KNOWN_DIMENSIONS.get(model)
        self.batch_size = batch_size
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self._extra_headers = dict(extra_headers or {})
        self._transport = transport
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        key = "'***'" if self._api_key is not None else "None"
        shown = self._failures.display_url.removesuffix("/embeddings")
        return f"OpenAIEmbedding(model={self.model!r}, base_url={shown!r}, api_key={key})"

    def __enter__(self) -> OpenAIEmbedding:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the HTTP connections; the next call opens new ones."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    @property
    def dim(self) -> int:
        """The vector length (for an unknown model, one probe request finds it)."""
        if self._dim is None:
            self.embed(["dimension probe"])
        assert self._dim is not None
        return self._dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One unit vector per text, ``batch_size`` texts per request.

        Raises:
            ModelHTTPError: A non-2xx answer (after retries for retryable statuses).
            ModelTimeoutError: The server did not answer within ``timeout``.
            ModelConnectionError: The server could not be reached (after retries).
            ModelProtocolError: An answer without one vector per text, or with vectors of
                the wrong length.
        """
        items = as_texts(texts)
        rows: dict[int, list[float]] = {}
        to_send = [i for i, text in enumerate(items) if text]
        for start in range(0, len(to_send), self.batch_size):
            batch = to_send[start : start + self.batch_size]
            for i, vector in zip(batch, self._request([items[i] for i in batch]), strict=True):
                rows[i] = vector
        if self._dim is None and not rows:
            self.embed(["dimension probe"])  # an all-empty first call: learn the length
        dim = self._dim or 0
        out = np.zeros((len(items), dim), dtype=np.float32)
        for i, vector in rows.items():
            out[i] = vector
        return normalize_rows(out)

    def _request(self, batch: list[str]) -> list[list[float]]:
        body: dict[str, Any] = {"model": self.model, "input": batch, "encoding_format": "float"}
        if self.dimensions is not None:
            body["dimensions"] = self.dimensions
        payload = self._post(body)
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list) or len(data) != len(batch):
            got = len(data) if isinstance(data, list) else "no"
            raise ModelProtocolError(
                f"embeddings answer has {got} vectors for {len(batch)} texts", model=self.model
            )
        vectors: list[list[float]] = [[] for _ in batch]
        for position, item in enumerate(data):
            index = item.get("index", position) if isinstance(item, dict) else None
            vector = item.get("embedding") if isinstance(item, dict) else None
            if not isinstance(index, int) or not 0 <= index < len(batch):
                raise ModelProtocolError("embeddings answer has a bad index", model=self.model)
            if not isinstance(vector, list) or not vector:
                raise ModelProtocolError(
                    "embeddings answer has an item without a vector (base64 is not supported)",
                    model=self.model,
                )
            vectors[index] = vector
        for vector in vectors:
            if self._dim is None:
                self._dim = len(vector)
            if len(vector) != self._dim:
                raise ModelProtocolError(
                    f"embeddings answer has a vector of length {len(vector)}, expected {self._dim}",
                    model=self.model,
                )
        return vectors

    def _http(self) -> httpx.Client:
        import httpx

        with self._lock:
            if self._client is None:
                headers = {"User-Agent": "agcore-lab", **self._extra_headers}
                if self._api_key is not None:
                    headers["Authorization"] = f"Bearer {self._api_key.get_secret_value()}"
                self._client = httpx.Client(
                    headers=headers, timeout=self.timeout, transport=self._transport
                )
            return self._client

    def _post(self, body: dict[str, Any]) -> Any:
        """POST with retries; return the parsed JSON of a 2xx answer."""
        import httpx

        client = self._http()
        failures = self._failures
        attempt = 0
        while True:
            try:
                with failures.mapping():
                    try:
                        response = client.post(self._url, json=body)
                    except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                        if attempt >= self.max_retries:
                            raise failures.connect_error(exc, attempt + 1) from exc
                        raise _Retry(failures.describe(exc)) from exc
            except _Retry as retry:
                self._backoff(attempt, None, f"connection failed: {retry}")
            else:
                if response.is_success:
                    with failures.mapping(reading=True):
                        try:
                            return response.json()
                        except (ValueError, RecursionError) as exc:
                            raise failures.not_json(response.content, exc) from exc
                status = response.status_code
                if status not in RETRY_STATUSES or attempt >= self.max_retries:
                    raise failures.status_error(status, response.content, attempt + 1)
                self._backoff(attempt, response.headers, f"HTTP {status}")
            attempt += 1

    def _backoff(self, attempt: int, headers: httpx.Headers | None, reason: str) -> None:
        delay = backoff_delay(attempt, self.backoff_base, self.backoff_max, headers)
        logger.info(
            "%s: %s; retry %d of %d in %.2fs",
            self._failures.display_url,
            reason,
            attempt + 1,
            self.max_retries,
            delay,
        )
        time.sleep(delay)


class _Retry(Exception):
    """A failed connection attempt that will be retried (internal to ``_post``)."""

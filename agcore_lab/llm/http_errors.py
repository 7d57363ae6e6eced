"""HTTP failures as :class:`~agcore_lab.errors.ModelError`, with every secret redacted.

One place for both HTTP clients (:class:`~agcore_lab.llm.openai.OpenAIChatModel` and
:class:`~agcore_lab.rag.openai_embedding.OpenAIEmbedding`), in the spirit of httpx's own
``map_exceptions``: :meth:`HTTPFailures.mapping` turns the httpx exceptions raised inside it
into our error tree, and scrubs the API key (and any secret query parameter of ``base_url``)
from every error that leaves it — messages, context, and the errors chained behind them — so
a server that echoes the ``Authorization`` header in a body cannot leak the key.

URLs: :func:`endpoint_url` appends the endpoint path to ``base_url`` *before* its query string
(Azure's ``?api-version=...`` stays a query), and messages and logs show
:attr:`HTTPFailures.display_url` (no ``user:password@``, no query). httpx logs each request's
full URL at INFO; a filter on the ``httpx`` logger redacts the registered secrets from it.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote, quote_plus

import httpx
from pydantic import SecretStr

from agcore_lab.errors import (
    AgcoreError,
    InvalidInputError,
    ModelConnectionError,
    ModelHTTPError,
    ModelProtocolError,
    ModelTimeoutError,
)

__all__ = ["HTTPFailures", "Redactor", "check_settings", "endpoint_url", "error_excerpt"]

MASK = "***"
_SECRET_PARAM = re.compile(r"key|token|secret|sig|password|auth|credential|code", re.IGNORECASE)
_BEARER = re.compile(r"(Bearer\s+)[^\s\"',;]+", re.IGNORECASE)
_HINTS = {
    401: " (check the API key: api_key or OPENAI_API_KEY)",
    403: " (check the API key and its permissions)",
    404: " (check base_url and the model name)",
}


def check_settings(
    timeout: object, max_retries: object, backoff_base: object, backoff_max: object
) -> None:
    """Refuse settings an HTTP client cannot work with (shared with the embeddings client)."""

    def number(value: object) -> bool:
        return (
            not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)
        )

    if not number(timeout) or timeout <= 0:  # type: ignore[operator]
        raise InvalidInputError(f"timeout must be a finite number of seconds > 0, got {timeout!r}")
    if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
        raise InvalidInputError(f"max_retries must be an int >= 0, got {max_retries!r}")
    for name, value in (("backoff_base", backoff_base), ("backoff_max", backoff_max)):
        if not number(value) or value < 0:  # type: ignore[operator]
            raise InvalidInputError(f"{name} must be a finite number >= 0, got {value!r}")


def endpoint_url(base_url: object, path: str) -> httpx.URL:
    """``base_url`` with ``path`` appended to its path, its query string kept.

    Example:
        >>> str(endpoint_url("https://x.example/openai/v1?api-version=2024-06-01", "/embeddings"))
        'https://x.example/openai/v1/embeddings?api-version=2024-06-01'

    Raises:
        InvalidInputError: Not a string, not http(s), or no host.
    """
    if not isinstance(base_url, str):
        raise InvalidInputError(f"base_url must be a string, got {type(base_url).__name__}")
    if not base_url.startswith(("http://", "https://")):
        raise InvalidInputError(f"base_url must start with http:// or https://, got {base_url!r}")
    try:
        url = httpx.URL(base_url)
    except (httpx.InvalidURL, ValueError, TypeError) as exc:
        raise InvalidInputError(f"base_url is not a valid URL: {exc}") from exc
    if not url.host:
        raise InvalidInputError(
            f"base_url has no host: {base_url!r} (expected e.g. http://localhost:11434/v1)"
        )
    return url.copy_with(path=url.path.rstrip("/") + path)


def _display(url: httpx.URL) -> str:
    port = f":{url.port}" if url.port is not None else ""
    return f"{url.scheme}://{url.host}{port}{url.path}"


def _query_secrets(url: httpx.URL) -> list[str]:
    return [v for k, v in url.params.multi_items() if v and _SECRET_PARAM.search(k)]


class Redactor:
    """Replaces each secret (as is and URL-encoded) and any ``Bearer`` token with ``***``."""

    def __init__(self, secrets: Iterable[str]) -> None:
        forms = set()
        for secret in secrets:
            if secret:
                forms |= {secret, quote(secret, safe=""), quote_plus(secret)}
        self._forms = sorted(forms, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for form in self._forms:
            text = text.replace(form, MASK)
        return _BEARER.sub(rf"\g<1>{MASK}", text)

    def value(self, value: Any) -> Any:
        """Redact strings, also inside lists, tuples and dicts."""
        if isinstance(value, str):
            return self(value)
        if isinstance(value, dict):
            return {k: self.value(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(self.value(v) for v in value)
        return value

    def scrub(self, exc: BaseException) -> None:
        """Redact an error in place, with the errors chained behind it."""
        seen: set[int] = set()
        current: BaseException | None = exc
        while current is not None and id(current) not in seen:
            seen.add(id(current))
            current.args = tuple(self.value(a) for a in current.args)
            if isinstance(getattr(current, "doc", None), str):  # json.JSONDecodeError
                current.doc = self(current.doc)  # type: ignore[attr-defined]
            if isinstance(current, AgcoreError):
                current.message = self(current.message)
                current.context = self.value(current.context)
                for key, value in current.context.items():
                    setattr(current, key, value)
                if isinstance(current, ModelHTTPError):
                    current.body = self(current.body)
            current = current.__cause__ or current.__context__


class _LogRedaction(logging.Filter):
    """Redacts registered secrets from httpx's request log lines (which show the full URL)."""

    def __init__(self) -> None:
        super().__init__()
        self.redactor = Redactor(())
        self._secrets: set[str] = set()

    def add(self, secrets: Iterable[str]) -> None:
        fresh = {s for s in secrets if s} - self._secrets
        if fresh:
            self._secrets |= fresh
            self.redactor = Redactor(self._secrets)

    def filter(self, record: logging.LogRecord) -> bool:
        if self._secrets:
            record.msg = self.redactor(record.getMessage())
            record.args = None
        return True


_LOG_FILTER = _LogRedaction()
logging.getLogger("httpx").addFilter(_LOG_FILTER)


def error_excerpt(text: str) -> str:
    """The server's ``error.message`` when the body is OpenAI-style JSON, else the text."""
    try:
        payload = json.loads(text)
    except (ValueError, RecursionError):
        payload = None
    error = payload.get("error") if isinstance(payload, dict) else None
    message = error.get("message") if isinstance(error, dict) else error
    excerpt = message if isinstance(message, str) and message else text.strip()
    return excerpt[:200] or "(empty body)"


class HTTPFailures:
    """Errors of one HTTP client, built in one way and never showing a secret.

    Args:
        service: What the endpoint is, for messages (``"chat completions"``, ``"embeddings"``).
        url: The endpoint's full URL (see :func:`endpoint_url`).
        model: The model name, kept in each error's context.
        api_key: The key sent as ``Authorization: Bearer``, if any.
        timeout: The client's timeout in seconds, for the timeout message.
    """

    def __init__(
        self,
        service: str,
        url: httpx.URL,
        *,
        model: str,
        api_key: SecretStr | None,
        timeout: float,
    ) -> None:
        self.service = service
        self.model = model
        self.timeout = timeout
        self.display_url = _display(url)
        secrets = _query_secrets(url)
        if api_key is not None:
            secrets.append(api_key.get_secret_value())
        self.redact = Redactor(secrets)
        _LOG_FILTER.add(secrets)

    def describe(self, exc: BaseException) -> str:
        """``str(exc)`` (or its type), redacted."""
        return self.redact(str(exc) or type(exc).__name__)

    @contextmanager
    def mapping(self, *, reading: bool = False) -> Iterator[None]:
        """Map httpx exceptions to ModelError subclasses and scrub every error raised.

        ``reading=True`` (reading a body or a stream): a transport failure means the answer
        was cut off, a :class:`ModelProtocolError`; otherwise the request failed, a
        :class:`ModelConnectionError`.
        """
        try:
            yield
        except httpx.TimeoutException as exc:
            raise self.timeout_error(exc) from exc
        except httpx.TransportError as exc:
            if reading:
                raise ModelProtocolError(
                    f"the {self.service} response was cut off: {self.describe(exc)}",
                    model=self.model,
                ) from exc
            raise ModelConnectionError(
                f"request to {self.display_url} failed: {self.describe(exc)}", model=self.model
            ) from exc
        except AgcoreError as exc:
            self.redact.scrub(exc)
            raise

    def timeout_error(self, exc: httpx.TimeoutException) -> ModelTimeoutError:
        return ModelTimeoutError(
            f"{self.display_url} did not answer within {self.timeout}s "
            f"({type(exc).__name__}); raise timeout= for slow models",
            model=self.model,
        )

    def connect_error(self, exc: Exception, attempts: int) -> ModelConnectionError:
        return ModelConnectionError(
            f"could not connect to {self.display_url} after {attempts} attempt(s): "
            f"{self.describe(exc)}",
            model=self.model,
        )

    def status_error(self, status: int, body: bytes | str, attempts: int) -> ModelHTTPError:
        """A non-2xx answer: status, the server's message (redacted) and a hint."""
        raw = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body
        text = self.redact(raw)
        retried = f" after {attempts} attempts" if attempts > 1 else ""
        return ModelHTTPError(
            f"{self.service} returned HTTP {status}{retried}: "
            f"{error_excerpt(text)}{_HINTS.get(status, '')}",
            status_code=status,
            body=text,
            model=self.model,
        )

    def not_json(self, body: bytes | str, exc: Exception) -> ModelProtocolError:
        raw = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body
        if isinstance(getattr(exc, "doc", None), str):  # JSONDecodeError keeps the whole body
            exc.doc = self.redact(exc.doc)  # type: ignore[attr-defined]
        return ModelProtocolError(
            f"{self.service} returned a body that is not JSON: {self.redact(raw[:200])!r}",
            model=self.model,
        )

"""Retry policy shared by the HTTP model clients (chat and embeddings).

Transient answers (429 and the 5xx statuses below) and connection failures are retried with
exponential backoff; a server's ``Retry-After`` (seconds or an HTTP date) or ``retry-after-ms``
hint replaces the computed delay. Every delay is capped.
"""

from __future__ import annotations

import email.utils
import math
from datetime import UTC, datetime

import httpx

__all__ = ["RETRY_STATUSES", "backoff_delay", "retry_after"]

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


def retry_after(headers: httpx.Headers) -> float | None:
    """Seconds the server asked us to wait (``retry-after-ms`` or ``Retry-After``)."""
    millis, value = headers.get("retry-after-ms"), headers.get("retry-after")
    for raw, scale in ((millis, 0.001), (value, 1.0)):
        try:
            seconds = float(raw) * scale if raw is not None else math.nan
        except ValueError:
            continue
        if math.isfinite(seconds):
            return max(0.0, seconds)
    if value is None:
        return None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def backoff_delay(
    attempt: int, base: float, cap: float, headers: httpx.Headers | None = None
) -> float:
    """Seconds to wait before retry ``attempt + 1``: ``base * 2**attempt``, or the server's
    hint when it gave one, never more than ``cap``."""
    hinted = retry_after(headers) if headers is not None else None
    delay = hinted if hinted is not None else base * 2.0 ** min(attempt, 60)
    return min(cap, delay)

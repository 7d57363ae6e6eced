"""Time-ordered identifiers.

Ids sort by creation time as plain strings, so "newest first" is an index scan. Within one
process the generator is strictly monotonic (two ids made in the same nanosecond still sort in
the order they were made); across processes the random tail keeps them unique.

Format: ``<prefix>_<16 hex digits of nanoseconds><8 hex random>``, e.g.
``ses_18a3c1f0b2e4d5a60f3c9b21``.
"""

from __future__ import annotations

import os
import threading
import time
from datetime import UTC, datetime

__all__ = ["new_id", "utcnow"]

_lock = threading.Lock()
_last_ns = 0


def _next_ns() -> int:
    global _last_ns
    with _lock:
        now = time.time_ns()
        _last_ns = now if now > _last_ns else _last_ns + 1
        return _last_ns


def new_id(prefix: str) -> str:
    """Return a new time-ordered id such as ``ckpt_18a3c1f0b2e4d5a60f3c9b21``.

    Args:
        prefix: A short lowercase tag naming the kind of thing (``ses``, ``msg``, ``ckpt``).
    """
    return f"{prefix}_{_next_ns():016x}{os.urandom(4).hex()}"


def utcnow() -> datetime:
    """The current time, timezone-aware, in UTC."""
    return datetime.now(UTC)

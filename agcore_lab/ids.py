"""Time-ordered identifiers.

Ids sort by creation time as plain strings, so "newest first" is an index scan. Within one
process the generator is strictly monotonic (two ids made in the same nanosecond still sort in
the order they were made); across processes the random tail keeps them unique.

Format: ``<prefix>_`` then 13 base-32 digits of the nanosecond clock and 4 random base-32
digits, e.g. ``ses_1hqk9c5e2d7r80f3c``. The digits ``0-9a-z`` without ``i l o u`` are in ASCII
order, so string order is time order; 17 characters keep the stored rows small.
"""

from __future__ import annotations

import os
import threading
import time
from datetime import UTC, datetime

__all__ = ["new_id", "utcnow"]

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
_lock = threading.Lock()
_last_ns = 0


def _next_ns() -> int:
    global _last_ns
    with _lock:
        now = time.time_ns()
        _last_ns = now if now > _last_ns else _last_ns + 1
        return _last_ns


def _base32(value: int, width: int) -> str:
    digits = []
    for _ in range(width):
        value, rest = divmod(value, 32)
        digits.append(_ALPHABET[rest])
    return "".join(reversed(digits))


def new_id(prefix: str) -> str:
    """Return a new time-ordered id such as ``ckpt_1hqk9c5e2d7r80f3c``.

    Args:
        prefix: A short lowercase tag naming the kind of thing (``ses``, ``msg``, ``ckpt``).
    """
    random_part = int.from_bytes(os.urandom(3), "big") & 0xFFFFF
    return f"{prefix}_{_base32(_next_ns(), 13)}{_base32(random_part, 4)}"


def utcnow() -> datetime:
    """The current time, timezone-aware, in UTC."""
    return datetime.now(UTC)

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
import random
import threading
import time
from datetime import UTC, datetime

__all__ = ["id_text", "new_id", "new_id_value", "utcnow"]

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
_PAIRS = [a + b for a in _ALPHABET for b in _ALPHABET]  # 10 bits -> two digits
_lock = threading.Lock()
_last_ns = 0
# Seeded from os.urandom, and again in a forked child (which would repeat its parent's tails).
_random = random.Random()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_random.seed)


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
    # 13 digits of the clock then 4 random ones = the 17 digits of (ns << 20 | random).
    value = _next_ns() << 20 | _random.getrandbits(20)
    pairs = _PAIRS
    digits = [
        pairs[value >> 75 & 1023],
        pairs[value >> 65 & 1023],
        pairs[value >> 55 & 1023],
        pairs[value >> 45 & 1023],
        pairs[value >> 35 & 1023],
        pairs[value >> 25 & 1023],
        pairs[value >> 15 & 1023],
        pairs[value >> 5 & 1023],
        _ALPHABET[value & 31],
    ]
    return f"{prefix}_{''.join(digits)}"


def new_id_value() -> int:
    """The number a new id is made of, ``nanosecond clock << 20 | 20 random bits`` (the same
    generator as :func:`new_id`), for code that keeps an id as a number until its text is
    needed: ``id_text(prefix, value)``.

    Example:
        >>> value = new_id_value()
        >>> id_text("call", value) < id_text("call", new_id_value())
        True
    """
    return _next_ns() << 20 | _random.getrandbits(20)


def id_text(prefix: str, value: int) -> str:
    """The id of :func:`new_id_value`'s ``value`` with ``prefix``."""
    pairs = _PAIRS
    return (
        f"{prefix}_{pairs[value >> 75 & 1023]}{pairs[value >> 65 & 1023]}"
        f"{pairs[value >> 55 & 1023]}{pairs[value >> 45 & 1023]}{pairs[value >> 35 & 1023]}"
        f"{pairs[value >> 25 & 1023]}{pairs[value >> 15 & 1023]}{pairs[value >> 5 & 1023]}"
        f"{_ALPHABET[value & 31]}"
    )


def utcnow() -> datetime:
    """The current time, timezone-aware, in UTC."""
    return datetime.now(UTC)

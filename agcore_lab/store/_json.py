"""The one JSON encoding of the store's JSON columns: compact, UTF-8 kept as it is, and no
NaN or Infinity (they are not JSON; SQLite's json functions and other backends refuse them)."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["compact"]

_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def compact(value: Any) -> str:
    """``value`` as compact JSON text; ``ValueError`` for NaN or Infinity."""
    return _ENCODER.encode(value)

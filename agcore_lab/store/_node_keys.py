"""Integer keys of chain nodes (SQLite layout of schema 11): text ids kept once, as numbers.

An id made by :func:`~agcore_lab.ids.new_id` is ``<prefix>_`` and the 17 base-32 digits of
``ns << 20 | random``: its 13 clock digits are a nanosecond count below 2^63 — the row's
integer key (``chain_nodes.node``, a rowid: rows are appended in key order, so pages fill) —
and its 4 random digits a small column (``tail``). Nothing else is needed to find a node by its
text id, so no index on text is kept. Any other id (a hand-written ``"m1"``, or the rare id
whose clock digits another node holds already) gets a negative key and its text in
``text_ids``. Sessions are numbered in ``session_keys``.

A node row is a message at home (``role`` set; its node id is the message id, prefix ``msg``)
or a link (``role`` NULL; ``message`` is the node of the message it places, prefix ``node``).

Examples:
    >>> key, tail = split_id("msg_1hqk9c5e2d7r80f3c", "msg")
    >>> render(key, tail, "msg")
    'msg_1hqk9c5e2d7r80f3c'
    >>> split_id("m1", "msg") is None
    True
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from functools import lru_cache

from agcore_lab.ids import id_text

__all__ = [
    "MESSAGE",
    "LINK",
    "ROLE_CODES",
    "ROLE_NAMES",
    "digits_sql",
    "id_sql",
    "new_text_key",
    "key_sql",
    "render",
    "session_key",
    "split_id",
    "text_keys",
]

MESSAGE = "msg"
LINK = "node"
ROLE_CODES = {"assistant": 0, "user": 1, "system": 2, "tool": 3}
ROLE_NAMES = {code: name for name, code in ROLE_CODES.items()}

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
# Our digits as Python's base-32 digits (0-9a-v), for int(text, 32).
_TO_INT = str.maketrans(_ALPHABET, "0123456789abcdefghijklmnopqrstuv")


def split_id(text: str, prefix: str) -> tuple[int, int] | None:
    """``(key, tail)`` of a ``new_id(prefix)`` id, or ``None`` for any other text."""
    return _split(text, prefix) if type(text) is str else None


@lru_cache(maxsize=8192)  # a turn splits the ids it writes again (parents, heads)
def _split(text: str, prefix: str) -> tuple[int, int] | None:
    size = len(prefix)
    if len(text) != size + 18 or text[size] != "_" or not text.startswith(prefix):
        return None
    digits = text[size + 1 :]
    if digits.strip(_ALPHABET):  # a character that is not one of our digits
        return None
    value = int(digits.translate(_TO_INT), 32)
    key = value >> 20
    if not 0 < key < 1 << 63:
        return None
    return key, value & 0xFFFFF


def render(key: int, tail: int, prefix: str) -> str:
    """The text id of a positive ``key`` and its ``tail`` (the inverse of :func:`split_id`)."""
    return id_text(prefix, key << 20 | tail)


def digits_sql(key: str, tail: str) -> str:
    """An SQL expression of the 17 digits of positive ``key`` and ``tail`` (SQL expressions):
    for views and conversions, where no Python function can be called."""
    clock = " || ".join(
        f"substr('{_ALPHABET}', ((({key}) >> {shift}) & 31) + 1, 1)" for shift in range(60, -1, -5)
    )
    rest = " || ".join(
        f"substr('{_ALPHABET}', ((({tail}) >> {shift}) & 31) + 1, 1)" for shift in range(15, -1, -5)
    )
    return f"{clock} || {rest}"


def id_sql(row: str) -> str:
    """An SQL expression of the text id of node row ``row`` (an alias of ``chain_nodes``)."""
    return (
        f"CASE WHEN {row}.node < 0 THEN (SELECT id FROM text_ids WHERE key = {row}.node) "
        f"ELSE CASE WHEN {row}.role IS NULL THEN '{LINK}_' ELSE '{MESSAGE}_' END "
        f"|| {digits_sql(f'{row}.node', f'{row}.tail')} END"
    )


def _digits_sql(text: str, start: str, count: int, width: int) -> str:
    return " + ".join(
        f"((instr('{_ALPHABET}', substr({text}, {start} + {i}, 1)) - 1) << {width * 5 - 5 * i})"
        for i in range(count)
    )


def key_sql(text: str, prefix: str) -> tuple[str, str, str]:
    """SQL of ``(is canonical, key, tail)`` of the text id ``text`` (an SQL expression) for
    :func:`split_id`'s rule — used by the triggers that make the views writable."""
    start = f"{len(prefix) + 2}"
    canonical = (
        f"(length({text}) = {len(prefix) + 18} AND substr({text}, 1, {len(prefix) + 1}) = "
        f"'{prefix}_' AND substr({text}, {start}, 17) GLOB '{'[0-9a-hjkmnp-tv-z]' * 17}' "
        f"AND substr({text}, {start}, 1) < '8' AND substr({text}, {start}, 13) > '0000000000000')"
    )
    key = _digits_sql(text, start, 13, 13 - 1)
    tail = _digits_sql(text, f"{start} + 13", 4, 4 - 1)
    return canonical, f"({key})", f"({tail})"


def text_keys(conn: sqlite3.Connection, texts: Iterable[str]) -> dict[str, int]:
    """The keys ``text_ids`` holds for any of ``texts`` (ids kept as text)."""
    found: dict[str, int] = {}
    ordered = sorted(set(texts))
    for start in range(0, len(ordered), 500):
        batch = ordered[start : start + 500]
        rows = conn.execute(
            f"SELECT id, key FROM text_ids WHERE id IN ({','.join('?' * len(batch))})", batch
        )
        found.update(rows)
    return found


def new_text_key(conn: sqlite3.Connection, text: str) -> int:
    """Keep the node id ``text`` in ``text_ids`` under a new (negative) key; return it."""
    key = conn.execute("SELECT coalesce(min(key), 0) - 1 FROM text_ids").fetchone()[0]
    conn.execute("INSERT INTO text_ids (key, id) VALUES (?, ?)", (key, text))
    return int(key)


def session_key(conn: sqlite3.Connection, session_id: str, *, create: bool) -> int | None:
    """The number of ``session_id`` in node rows (made when ``create``; else ``None`` if it
    has none)."""
    found = conn.execute(
        "SELECT key FROM session_keys WHERE session_id = ?", (session_id,)
    ).fetchone()
    if found is not None:
        return int(found[0])
    if not create:
        return None
    return int(
        conn.execute(
            "INSERT INTO session_keys (session_id) VALUES (?) RETURNING key", (session_id,)
        ).fetchone()[0]
    )

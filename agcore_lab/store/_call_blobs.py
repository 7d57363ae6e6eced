"""The blobs of the call log (``call_blobs``): content addresses, bodies, and which blobs a
session's committed calls already reference (see :mod:`agcore_lab.store._calls`).

Bodies of objects sent again and again (the system prompt, the tools) are serialized once per
object; a blob a session's stored calls already use is not written again (:class:`Interned`).
"""

from __future__ import annotations

import base64
import hashlib
import operator
import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import TypeAdapter

from agcore_lab.llm.base import ToolSpec
from agcore_lab.llm.messages import Message
from agcore_lab.store._json import compact

__all__ = [
    "NOTHING",
    "TOOLS",
    "Interned",
    "digest_of",
    "forget",
    "interned",
    "message_body",
    "tools_body",
    "write_blobs",
]

TOOLS = TypeAdapter(list[ToolSpec])

_DIGESTS: dict[str, str] = {}  # body -> its content address (the same bodies recur)


def digest_of(body: str) -> str:
    # 64 bits in 11 URL-safe base64 characters (content addresses within one database).
    digest = _DIGESTS.get(body)
    if digest is None:
        raw = hashlib.blake2b(body.encode(), digest_size=8).digest()
        digest = base64.urlsafe_b64encode(raw).decode().rstrip("=")
        if len(_DIGESTS) >= 2_000:
            _DIGESTS.clear()
        _DIGESTS[body] = digest
    return digest


class Interned:
    """The blobs a session's *committed* calls reference, as one SQLite connection knows
    them: a later call of the session references them without writing (or even
    serializing) them again.

    A blob this connection inserted is only tentative until its write is known to have
    committed: the next write of the session checks that the call row it came with is
    stored (one read, once per new blob set: the call's ``call_rows`` row, or the node row a
    turn's common call rides on). Each blob is written with a pin to its session
    (``call_blob_pins``, schema 13, see :func:`write_blobs`), and the blob clean-up spares
    pinned blobs: so a blob confirmed here stays stored while its session lives, whatever
    other connections or processes do (they may prune the session's calls and delete other
    sessions: the pin keeps the blob; deleting the session itself makes its next commit
    fail). No read per write is needed. Deleting a session's calls here (prune, delete)
    forgets its blobs.
    """

    def __init__(self) -> None:
        self.confirmed: dict[str, set[str]] = {}
        # session -> (a query that finds a row of the write the blobs came with, its
        # parameters, the blobs)
        self.tentative: dict[str, tuple[str, tuple[object, ...], set[str]]] = {}

    def known(self, conn: sqlite3.Connection, session_id: str) -> set[str]:
        tentative = self.tentative
        if tentative:
            pending = tentative.pop(session_id, None)
            if pending is not None:
                stored = conn.execute(pending[0], pending[1]).fetchone()
                if stored is not None:
                    self.confirmed.setdefault(session_id, set()).update(pending[2])
        return self.confirmed.get(session_id, NOTHING)

    def forget(self, session_id: str) -> None:
        self.confirmed.pop(session_id, None)
        self.tentative.pop(session_id, None)


NOTHING: set[str] = set()
# Per SQLite connection (kept with its entry, so its id is not reused). PostgreSQL writes go
# through pooled connections: their blobs are written (``ON CONFLICT DO NOTHING``) every call.
_BY_CONNECTION: dict[int, tuple[object, Interned]] = {}


def interned(conn: sqlite3.Connection) -> Interned | None:
    """What ``conn`` knows of the stored blobs (``None``: not a SQLite connection)."""
    last = _LAST[0]
    if last is not None and last[0] is conn:  # the connection of the previous write
        return last[1]
    if not isinstance(conn, sqlite3.Connection):
        return None
    entry = _BY_CONNECTION.get(id(conn))
    if entry is None or entry[0] is not conn:
        if len(_BY_CONNECTION) >= 256:
            _BY_CONNECTION.clear()
        entry = (conn, Interned())
        _BY_CONNECTION[id(conn)] = entry
    _LAST[0] = entry
    return entry[1]


_LAST: list[tuple[object, Interned] | None] = [None]

# A turn's usual call shape whose blobs a connection knows confirmed stored for a session,
# as ``((connection, session, slot, model, head messages), tools, (shape, names))`` (see
# ``_calls_lean``): the session's next usual calls take it with one comparison. Cleared
# wherever a connection forgets a session's blobs (:func:`forget`).
_MEMO: list[tuple[tuple[object, ...], list[ToolSpec], Any] | None] = [None]


_INSERT_BLOB = "INSERT OR IGNORE INTO call_blobs (hash, body) VALUES (?, ?)"
_PIN = "INSERT OR IGNORE INTO call_blob_pins (session_id, hash) VALUES (?, ?)"


def write_blobs(
    conn: sqlite3.Connection, session_id: str, blobs: dict[str, str], *, pin: bool = True
) -> None:
    """Store ``blobs`` (content address -> body) for ``session_id``'s calls and, on SQLite
    (``pin``), pin them to the session in the same write (see :class:`Interned`)."""
    conn.executemany(_INSERT_BLOB, list(blobs.items()))
    if pin:
        conn.executemany(_PIN, [(session_id, digest) for digest in blobs])


def forget(conn: sqlite3.Connection, session_id: str) -> None:
    """Forget what ``conn`` knows of ``session_id``'s stored blobs (its calls were deleted)."""
    _MEMO[0] = None
    state = interned(conn)
    if state is not None:
        state.forget(session_id)


# Serialized blobs of objects sent again and again (the system prompt, the tools), by object:
# id -> (the object, its body, its digest).
_BODIES: dict[int, tuple[object, str, str]] = {}


def _body(value: object, make: Callable[[], str]) -> tuple[str, str]:
    cached = _BODIES.get(id(value))
    if cached is not None and cached[0] is value:
        return cached[1], cached[2]
    body = make()
    if len(_BODIES) >= 5_000:
        _BODIES.clear()
    _BODIES[id(value)] = (value, body, digest_of(body))
    return body, digest_of(body)


def message_body(message: Message) -> tuple[str, str]:
    # Request parts are stored by content (no id or time), so an injected summary made anew
    # for every call, or the system prompt of every session, is kept once.
    return _body(
        message, lambda: compact(message.model_dump(mode="json", exclude={"id", "created_at"}))
    )


_TOOL_BODIES: dict[tuple[int, ...], tuple[tuple[ToolSpec, ...], str, str]] = {}


def tools_body(tools: Sequence[ToolSpec]) -> tuple[str, str]:
    # By the tool objects (an agent offers the same ToolSpec objects every call).
    key = tuple(map(id, tools))
    cached = _TOOL_BODIES.get(key)
    if cached is None or not all(map(operator.is_, cached[0], tools)):
        if len(_TOOL_BODIES) >= 1_000:
            _TOOL_BODIES.clear()
        body = TOOLS.dump_json(list(tools)).decode()
        cached = (tuple(tools), body, digest_of(body))
        _TOOL_BODIES[key] = cached
    return cached[1], cached[2]

"""Model-call records in SQLite: one lean row per call, messages shared with the chains.

A ``model_calls`` row has flat, pandas-friendly columns (session, slot, turn, model, status,
tokens, cost, start time, latency, time to first token, finish reason, request hash, the
checkpoint it led to) and a compact ``parts_json`` that says how to rebuild the request:

- ``t``: how many messages at the end of the request are the last messages of the chain
  ending at ``anchor_node`` (the slot's history: stored once, read through the chain);
- ``p``: hashes of the other request messages, in order (system prompt, injected summary,
  pinned messages, or messages that were never committed), kept once each in ``call_blobs``
  — the same system prompt sent 1,000 times is stored once;
- ``T``: the hash of the tools offered (in ``call_blobs``);
- ``r``: the hash of the response when it is not a stored message (summaries, failed turns);
  otherwise ``response_id`` names it in ``messages``, and ``anchor_node`` is left empty: the
  answer is placed in the chain right after the anchor, so its row's parent is the anchor;
- ``i``: one letter per request part the engine injected (``s`` system prompt, ``m``
  summary, ``p`` pinned message, ``x`` other; ``-`` not injected).

A turn's call (a tail and tools, maybe head parts; no ``r``) is written as the array
``[t, "T"]`` or ``[t, "T", [p...], "i"]``: the same parts without their key names.

Rare fields (parameters, the Focused window start, retries, the error, streamed and replayed
flags) go to ``detail_json`` only when set.

The primary key is ``(session_id, call_id)``: a session's calls are one range scan, oldest
first. The checkpoint a call led to is not written with it: it is the session's first
checkpoint after the call (ids are time-ordered), found when reading; deleting checkpoints
deletes the calls that led to them. Latencies are whole microseconds.

The request hash is 16 bytes when it was known at write time (a redacted call keeps the hash
of the request as sent; records stored before the hash moved to read time) and zero bytes
otherwise: a turn does not hash its request, the reader derives the same value from the
parts (:mod:`agcore_lab.store._calls_read`).

Writes are lean (a recorder's :class:`~agcore_lab.llm.call_note.CallNote`, no record): the
blobs a session's committed calls already reference (its tools, its system prompt) are not
written or serialized again (:class:`~agcore_lab.store._call_blobs.Interned`); the row is
plain integers and strings.
"""

from __future__ import annotations

import bisect
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import JsonValue

from agcore_lab.llm.call_note import CallNote, to_note
from agcore_lab.llm.call_record import ModelCall
from agcore_lab.store._call_blobs import (
    NOTHING,
    digest_of,
    forget,
    interned,
    message_body,
    tools_body,
)
from agcore_lab.store._json import compact
from agcore_lab.store._sqlite_checkpoints import ids_of_session
from agcore_lab.store.base import LinkRecord

__all__ = [
    "checkpoint_ids",
    "delete_calls_of_checkpoints",
    "delete_session_calls",
    "home_parents",
    "insert_calls",
    "stamp",
]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_BLOB_ID = "blob_"
_LETTERS = {"system_prompt": "s", "summary": "m", "pinned": "p", "injected": "x"}
_LABELS = {letter: label for label, letter in _LETTERS.items()}


def _detail(call: CallNote) -> str | None:
    if not (
        call.params
        or call.window_start
        or call.retries
        or call.error is not None
        or call.streamed
        or call.replayed
        or call.usage.requests != 1
    ):
        return None  # the usual call: nothing rare to keep
    detail: dict[str, JsonValue] = {}
    if call.params:
        detail["params"] = call.params
    if call.window_start:
        detail["window_start"] = call.window_start
    if call.retries:
        detail["retries"] = call.retries
    if call.error is not None:
        detail["error"] = call.error
    if call.streamed:
        detail["streamed"] = True
    if call.replayed:
        detail["replayed"] = True
    if call.usage.requests != 1:
        detail["requests"] = call.usage.requests
    return compact(detail) if detail else None


# The columns of a model_calls row, in the order of _row's values.
_CALL_COLUMNS = (
    "session_id",
    "call_id",
    "slot_id",
    "turn_index",
    "kind",
    "model",
    "status",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "started_us",
    "latency_us",
    "ttft_us",
    "finish_reason",
    "request_hash",
    "anchor_node",
    "response_id",
    "parts_json",
    "detail_json",
)
_INSERT_CALL = (
    f"INSERT OR IGNORE INTO model_calls ({', '.join(_CALL_COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(_CALL_COLUMNS))})"
)
_INSERT_BLOB = "INSERT OR IGNORE INTO call_blobs (hash, body) VALUES (?, ?)"
# A request hash left for the reader to derive from the stored parts (zero bytes).
UNHASHED = b""


def _parts_json(
    tail: int, tools_hash: str, heads: list[str], letters: str, response_hash: str | None
) -> str:
    if tail and tools_hash and response_hash is None and (not letters or heads):
        # A turn's call: [t, T] or [t, T, [p...], i] (the parts without their key names).
        if heads:
            quoted = ",".join(f'"{h}"' for h in heads)
            return f'[{tail},"{tools_hash}",[{quoted}],"{letters}"]'
        return f'[{tail},"{tools_hash}"]'
    parts: dict[str, JsonValue] = {}
    if heads:
        parts["p"] = list(heads)
    if letters:
        parts["i"] = letters  # one letter per head part ("-": not injected)
    if tail:
        parts["t"] = tail
    if tools_hash:
        parts["T"] = tools_hash
    if response_hash is not None:
        parts["r"] = response_hash
    return compact(parts)


def _heads(call: CallNote, count: int, known: set[str], blobs: dict[str, str]) -> list[str]:
    heads = []
    for message in call.request[:count]:
        body, digest = message_body(message)
        if digest not in known:
            blobs[digest] = body
        heads.append(digest)
    return heads


def _letters(injected: dict[int, str] | None) -> str:
    if not injected:
        return ""
    return "".join(_LETTERS.get(injected.get(i, ""), "-") for i in range(max(injected) + 1))


def _row(
    call: CallNote, homes: dict[str, str], known: set[str], blobs: dict[str, str]
) -> tuple[Any, ...]:
    """The row of ``call``; blobs it needs that ``known`` does not hold go to ``blobs``."""
    anchor, tail = call.tail if call.tail is not None else (None, 0)
    count = len(call.request) - tail
    tools_hash = ""
    if call.tools:
        body, tools_hash = tools_body(call.tools)
        if tools_hash not in known:
            blobs[tools_hash] = body
    heads = _heads(call, count, known, blobs) if count else []
    response = call.response
    response_id = response_hash = None
    if response is not None:
        if call.response_stored:
            response_id = response.id
            if homes.get(response_id, "") == anchor:
                # The answer's own row places it right after the anchor (written in this
                # transaction): its parent is the anchor, not stored again (21 B a call).
                anchor = None
        else:
            body = compact(response.model_dump(mode="json"))
            response_hash = digest_of(body)
            blobs[response_hash] = body
    usage = call.usage
    return (
        call.session_id,
        call.call_id,
        call.slot_id,
        call.turn_index,
        call.kind,
        call.model,
        call.status,
        usage.prompt_tokens,
        usage.completion_tokens,
        call.cost,
        call.started_ns // 1000,
        (call.latency_ns + 500) // 1000,
        (call.ttft_ns + 500) // 1000 if call.ttft_ns is not None else None,
        call.finish_reason,
        bytes.fromhex(call.request_hash) if call.request_hash is not None else UNHASHED,
        anchor,
        response_id,
        _parts_json(tail, tools_hash, heads, _letters(call.injected), response_hash),
        _detail(call),
    )


def insert_calls(
    conn: sqlite3.Connection,
    calls: Sequence[ModelCall | CallNote],
    homes: dict[str, str] | None = None,
) -> None:
    """Insert call records or notes (an id stored already is skipped).

    A call is anchored at the chain node its history tail ends at (or, with no tail, the
    slot's head when it was made), so a rollback past that node marks it abandoned.
    ``homes`` maps messages placed at home in the same transaction to their parent node.
    A note without a request hash is stored without one: the reader derives it.
    """
    state = interned(conn)
    if len(calls) == 1 and state is not None:  # the usual turn: one call, all known
        note = to_note(calls[0])
        blobs: dict[str, str] = {}
        row = _row(note, homes or {}, state.known(conn, note.session_id), blobs)
        if not blobs:
            conn.execute(_INSERT_CALL, row)
            return
    rows = []
    known: dict[str, set[str]] = {}
    fresh: dict[str, tuple[str, set[str]]] = {}  # per session: a call of this write, its blobs
    for call in calls:
        note = to_note(call)
        sid = note.session_id
        if sid not in known:
            known[sid] = state.known(conn, sid) if state is not None else NOTHING
        blobs = {}
        rows.append(_row(note, homes or {}, known[sid], blobs))
        if blobs:
            conn.executemany(_INSERT_BLOB, list(blobs.items()))
            fresh[sid] = (note.call_id, set(blobs) | fresh.get(sid, ("", set()))[1])
    conn.executemany(_INSERT_CALL, rows)
    if state is not None:
        state.tentative.update(fresh)


def home_parents(links: Sequence[LinkRecord], renamed: dict[str, str]) -> dict[str, str]:
    """Messages placed at home by ``links`` (not renamed on the way): message id -> parent."""
    return {
        link.message_id: link.parent_node_id
        for link in links
        if link.node_id == link.message_id
        and link.parent_node_id is not None
        and link.node_id not in renamed
    }


def stamp(some_id: str) -> str:
    # Ids are "<prefix>_<time-ordered digits>": compare the digits across kinds of ids.
    return some_id.split("_", 1)[-1]


def checkpoint_ids(conn: sqlite3.Connection, session_ids: set[str]) -> dict[str, list[str]]:
    """Each session's checkpoint ids, oldest first (to find the one a call led to)."""
    found: dict[str, list[str]] = {}
    lean = getattr(conn, "dialect", "sqlite") != "postgresql"
    for session_id in sorted(session_ids):
        if lean:  # schema 11: the lean rows by session, not the view's computed ids
            ids = ids_of_session(conn, session_id)
        else:
            rows = conn.execute(
                "SELECT ckpt_id FROM checkpoints WHERE session_id = ?", (session_id,)
            ).fetchall()
            ids = [r[0] for r in rows]
        found[session_id] = sorted(ids, key=stamp)
    return found


_ORPHAN_BLOBS = """
DELETE FROM call_blobs WHERE hash NOT IN (
    SELECT p.value FROM model_calls c, json_each(c.parts_json, '$.p') p
    UNION SELECT p.value FROM model_calls c, json_each(c.parts_json, '$[2]') p
    UNION SELECT json_extract(parts_json, '$.T') FROM model_calls
        WHERE json_extract(parts_json, '$.T') IS NOT NULL
    UNION SELECT json_extract(parts_json, '$.r') FROM model_calls
        WHERE json_extract(parts_json, '$.r') IS NOT NULL
    UNION SELECT json_extract(parts_json, '$[1]') FROM model_calls
        WHERE json_extract(parts_json, '$[1]') IS NOT NULL)
"""
_ORPHAN_BLOBS_PG = """
DELETE FROM call_blobs WHERE hash NOT IN (
    SELECT p.value FROM model_calls c,
        jsonb_array_elements_text(coalesce(c.parts_json::jsonb -> 'p', '[]'::jsonb)) p
    UNION SELECT p.value FROM model_calls c,
        jsonb_array_elements_text(coalesce(c.parts_json::jsonb -> 2, '[]'::jsonb)) p
    UNION SELECT parts_json::jsonb ->> 'T' FROM model_calls
        WHERE parts_json::jsonb ->> 'T' IS NOT NULL
    UNION SELECT parts_json::jsonb ->> 'r' FROM model_calls
        WHERE parts_json::jsonb ->> 'r' IS NOT NULL
    UNION SELECT parts_json::jsonb ->> 1 FROM model_calls
        WHERE parts_json::jsonb ->> 1 IS NOT NULL)
"""


def _drop_orphan_blobs(conn: sqlite3.Connection) -> None:
    postgres = getattr(conn, "dialect", "sqlite") == "postgresql"
    conn.execute(_ORPHAN_BLOBS_PG if postgres else _ORPHAN_BLOBS)


def delete_calls_of_checkpoints(
    conn: sqlite3.Connection, session_id: str, ckpt_ids: Sequence[str] | None
) -> int:
    """Delete the calls that led to the given checkpoints (to any checkpoint for ``None``).

    Run it before deleting the checkpoints: a call led to the first checkpoint after it.
    Content blobs stay (they are shared and small) until their session is deleted.
    """
    forget(conn, session_id)  # the calls that referenced its blobs may go
    ckpts = checkpoint_ids(conn, {session_id})[session_id]
    if not ckpts:
        return 0
    doomed = set(ckpts) if ckpt_ids is None else set(ckpt_ids)
    stamps = [stamp(c) for c in ckpts]
    calls = [
        r[0]
        for r in conn.execute("SELECT call_id FROM model_calls WHERE session_id = ?", (session_id,))
    ]
    gone = []
    for call_id in calls:
        index = bisect.bisect_right(stamps, stamp(call_id))
        if index < len(ckpts) and ckpts[index] in doomed:
            gone.append(call_id)
    conn.executemany(
        "DELETE FROM model_calls WHERE session_id = ? AND call_id = ?",
        [(session_id, call_id) for call_id in gone],
    )
    return len(gone)


def delete_session_calls(conn: sqlite3.Connection, session_id: str) -> None:
    """Delete every call of a session (and the blobs no other call uses)."""
    forget(conn, session_id)
    if conn.execute("DELETE FROM model_calls WHERE session_id = ?", (session_id,)).rowcount:
        _drop_orphan_blobs(conn)

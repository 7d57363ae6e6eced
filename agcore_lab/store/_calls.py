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
deletes the calls that led to them. Latencies are whole microseconds; the request hash is 16
bytes.
"""

from __future__ import annotations

import base64
import bisect
import hashlib
import sqlite3
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import JsonValue, TypeAdapter

from agcore_lab.llm.base import ToolSpec
from agcore_lab.llm.call_record import ModelCall
from agcore_lab.llm.messages import Message
from agcore_lab.store._json import compact
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
_TOOLS = TypeAdapter(list[ToolSpec])
_BLOB_ID = "blob_"
_LETTERS = {"system_prompt": "s", "summary": "m", "pinned": "p", "injected": "x"}
_LABELS = {letter: label for label, letter in _LETTERS.items()}


def _micros(moment: datetime) -> int:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // timedelta(microseconds=1)


_DIGESTS: dict[str, str] = {}  # body -> its content address (the same bodies recur)


def _put_blob(conn: sqlite3.Connection, body: str) -> str:
    # 64 bits in 11 URL-safe base64 characters (content addresses within one database).
    digest = _DIGESTS.get(body)
    if digest is None:
        raw = hashlib.blake2b(body.encode(), digest_size=8).digest()
        digest = base64.urlsafe_b64encode(raw).decode().rstrip("=")
        if len(_DIGESTS) >= 2_000:
            _DIGESTS.clear()
        _DIGESTS[body] = digest
    conn.execute("INSERT OR IGNORE INTO call_blobs (hash, body) VALUES (?, ?)", (digest, body))
    return digest


# Serialized blobs of objects sent again and again (the system prompt, the tools), by object:
# id -> (the object, its body). Only the serializing is cached; every call still inserts.
_BODIES: dict[int, tuple[object, str]] = {}


def _body(value: object, make: Callable[[], str]) -> str:
    cached = _BODIES.get(id(value))
    if cached is not None and cached[0] is value:
        return cached[1]
    body = make()
    if len(_BODIES) >= 5_000:
        _BODIES.clear()
    _BODIES[id(value)] = (value, body)
    return body


def _message_blob(conn: sqlite3.Connection, message: Message, *, keep_id: bool) -> str:
    # Request parts are stored by content (no id or time), so an injected summary made anew
    # for every call, or the system prompt of every session, is kept once.
    if keep_id:
        return _put_blob(conn, compact(message.model_dump(mode="json")))
    body = _body(
        message, lambda: compact(message.model_dump(mode="json", exclude={"id", "created_at"}))
    )
    return _put_blob(conn, body)


_TOOL_BODIES: dict[tuple[int, ...], tuple[tuple[ToolSpec, ...], str]] = {}


def _tools_blob(conn: sqlite3.Connection, tools: Sequence[ToolSpec]) -> str:
    key = tuple(id(t) for t in tools)
    cached = _TOOL_BODIES.get(key)
    if cached is None or not all(a is b for a, b in zip(cached[0], tools, strict=True)):
        if len(_TOOL_BODIES) >= 1_000:
            _TOOL_BODIES.clear()
        cached = (tuple(tools), _TOOLS.dump_json(list(tools)).decode())
        _TOOL_BODIES[key] = cached
    return _put_blob(conn, cached[1])


def _detail(call: ModelCall) -> str | None:
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


def _row(conn: sqlite3.Connection, call: ModelCall, homes: dict[str, str]) -> tuple[Any, ...]:
    anchor, tail = call._tail if call._tail is not None else (None, 0)
    head = call.request_messages[: len(call.request_messages) - tail]
    parts: dict[str, JsonValue] = {}
    if head:
        parts["p"] = [_message_blob(conn, m, keep_id=False) for m in head]
    if call.injected:
        # One letter per head part: what the engine injected there ("-": not injected).
        parts["i"] = "".join(
            _LETTERS.get(call.injected.get(i, ""), "-") for i in range(max(call.injected) + 1)
        )
    if tail:
        parts["t"] = tail
    if call.tools:
        parts["T"] = _tools_blob(conn, call.tools)
    response_id = None
    if call.response is not None:
        if call._response_stored:
            response_id = call.response.id
            if homes.get(response_id, "") == anchor:
                # The answer's own row places it right after the anchor (written in this
                # transaction): its parent is the anchor, not stored again (21 B a call).
                anchor = None
        else:
            parts["r"] = _message_blob(conn, call.response, keep_id=True)
    if tail and "T" in parts and "r" not in parts and ("i" not in parts or "p" in parts):
        parts_json = f'[{tail},"{parts["T"]}"]'
        if "p" in parts:
            heads = ",".join(f'"{h}"' for h in parts["p"])  # type: ignore[union-attr]
            parts_json = f'[{tail},"{parts["T"]}",[{heads}],"{parts.get("i", "")}"]'
    else:
        parts_json = compact(parts)
    return (
        call.session_id,
        call.call_id,
        call.slot_id,
        call.turn_index,
        call.kind,
        call.model,
        call.status,
        call.usage.prompt_tokens,
        call.usage.completion_tokens,
        call.cost,
        _micros(call.started_at),
        round(call.latency_s * 1_000_000),
        round(call.ttft_s * 1_000_000) if call.ttft_s is not None else None,
        call.finish_reason,
        bytes.fromhex(call.request_hash),
        anchor,
        response_id,
        parts_json,
        _detail(call),
    )


def insert_calls(
    conn: sqlite3.Connection, calls: Sequence[ModelCall], homes: dict[str, str] | None = None
) -> None:
    """Insert call records (an id stored already is skipped).

    A call is anchored at the chain node its history tail ends at (or, with no tail, the
    slot's head when it was made), so a rollback past that node marks it abandoned.
    ``homes`` maps messages placed at home in the same transaction to their parent node.
    """
    conn.executemany(
        f"INSERT OR IGNORE INTO model_calls ({', '.join(_CALL_COLUMNS)}) "
        f"VALUES ({', '.join('?' * len(_CALL_COLUMNS))})",
        [_row(conn, call, homes or {}) for call in calls],
    )


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
    for session_id in sorted(session_ids):
        rows = conn.execute(
            "SELECT ckpt_id FROM checkpoints WHERE session_id = ?", (session_id,)
        ).fetchall()
        found[session_id] = sorted((r[0] for r in rows), key=stamp)
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
    if conn.execute("DELETE FROM model_calls WHERE session_id = ?", (session_id,)).rowcount:
        _drop_orphan_blobs(conn)

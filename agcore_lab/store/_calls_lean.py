"""A turn's common model call kept on its answer's ``chain_nodes`` row (SQLite, schema 12).

The usual call — a turn's request answered with a message the turn stores at home right
after the request's history — needs no row of its own: its few fields ride in the ``call``
column of the answer's node row, written by the turn's one insert, so recording it touches no
other b-tree (see :mod:`agcore_lab.store.migrations.lean_calls`). The column is a compact JSON
array, positions fixed:

====  ===========================================================================
0     the call id: ``(node key - call clock) << 20 | call random digits``
1     turn index
2, 3  slot id, model
4, 5  prompt and completion tokens
6     cost (a float)
7     start: the node key's microseconds minus the call's start, in microseconds
8     latency, microseconds
9     finish reason
10    the request's parts, as ``model_calls.parts_json`` (see :mod:`._calls`)
11    time to first token, microseconds (only when streamed)
12    the rare fields, as ``model_calls.detail_json`` (only when set)
====  ===========================================================================

Everything else of the old row is implied: the session is the node's, the response is the
node's message, the anchor is the node's parent, kind ``turn``, status ``ok``, and the request
hash is derived when the call is read. Any other call keeps its ``call_rows`` row
(:func:`~agcore_lab.store._calls.insert_calls`).
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

from agcore_lab.llm.call_note import CallNote
from agcore_lab.llm.call_record import ModelCall
from agcore_lab.store._call_blobs import interned, tools_body
from agcore_lab.store._calls import (
    Fresh,
    _detail,
    _heads,
    _letters,
    _parts_json,
    add_fresh,
    stamp,
)
from agcore_lab.store._node_keys import MESSAGE, render, session_key, split_id
from agcore_lab.store.base import LinkRecord

__all__ = [
    "NodeCalls",
    "clear_node_calls",
    "forget_node_calls",
    "node_call_rows",
    "node_call_stamps",
    "node_calls",
]

CALL = "call"
_MASK = (1 << 20) - 1
_MAX_OFFSET = 1 << 40  # about 18 minutes from a call's start to its answer's id
_INSERT_BLOB = "INSERT OR IGNORE INTO call_blobs (hash, body) VALUES (?, ?)"
_NODE_STORED = "SELECT 1 FROM chain_nodes WHERE node = ? AND call IS NOT NULL"

# What a turn's commit writes on node rows: message id -> the ``call`` text for that node's
# key (``None``: it does not fit there after all; the call then keeps a row of its own).
NodeCalls = dict[str, Callable[[int], str | None]]

_TEXTS: dict[str, str] = {}  # name -> its JSON string (slot ids, models, finish reasons)


def _text(value: str | None) -> str:
    if value is None:
        return "null"
    found = _TEXTS.get(value)
    if found is None:
        found = json.dumps(value, ensure_ascii=False)
        if len(_TEXTS) >= 1_000:
            _TEXTS.clear()
        _TEXTS[value] = found
    return found


def _encoder(
    note: CallNote, parts: str, call_key: int, call_tail: int
) -> Callable[[int], str | None]:
    def encode(node: int) -> str | None:
        offset = node - call_key
        if not 0 <= offset < _MAX_OFFSET:
            return None
        usage, cost = note.usage, note.cost
        detail = _detail(note)
        ttft = (note.ttft_ns + 500) // 1000 if note.ttft_ns is not None else None
        rare = ""
        if ttft is not None or detail is not None:
            rare = f",{ttft if ttft is not None else 'null'}"
            if detail is not None:
                rare += f",{detail}"
        return (
            f"[{offset << 20 | call_tail},{note.turn_index},{_text(note.slot_id)},"
            f"{_text(note.model)},{usage.prompt_tokens},{usage.completion_tokens},{cost!r},"
            f"{node // 1000 - note.started_ns // 1000},{(note.latency_ns + 500) // 1000},"
            f"{_text(note.finish_reason)},{parts}{rare}]"
        )

    return encode


def _fits(note: CallNote) -> bool:
    """Whether ``note`` is the common call (see the module docstring) in its values."""
    usage, cost = note.usage, note.cost
    return (
        note.request_hash is None
        and note.kind == "turn"
        and note.status == "ok"
        and note.response_stored
        and note.response is not None
        and note.tail is not None
        and type(note.turn_index) is int
        and type(usage.prompt_tokens) is int
        and type(usage.completion_tokens) is int
        and type(cost) is float
        and math.isfinite(cost)
        and (note.finish_reason is None or type(note.finish_reason) is str)
    )


def node_calls(
    conn: sqlite3.Connection,
    calls: Sequence[ModelCall | CallNote],
    links: Sequence[LinkRecord],
) -> tuple[NodeCalls, Fresh]:
    """The calls of a turn's commit that may ride on their answers' node rows, and the blobs
    written for them here (those the store may not hold), for ``insert_calls(fresh=...)``;
    the other calls are left out."""
    found: NodeCalls = {}
    fresh: Fresh = {}
    state = interned(conn)
    if state is None:
        return found, fresh
    homes: dict[str, str | None] | None = None
    for note in calls:
        if not isinstance(note, CallNote) or not _fits(note):
            continue
        if homes is None:
            homes = {
                lk.message_id: lk.parent_node_id for lk in links if lk.node_id == lk.message_id
            }
        response = note.response
        assert response is not None and note.tail is not None
        anchor, tail = note.tail
        if homes.get(response.id, "") != anchor:
            continue  # not placed right after its history: the row keeps its anchor
        call_pair = split_id(note.call_id, CALL)
        node_pair = split_id(response.id, MESSAGE)
        if call_pair is None or node_pair is None:
            continue
        tools_hash = ""
        blobs: dict[str, str] = {}
        known = state.known(conn, note.session_id)
        if note.tools:
            body, tools_hash = tools_body(note.tools)
            if tools_hash not in known:
                blobs[tools_hash] = body
        count = len(note.request) - tail
        heads = _heads(note, count, known, blobs) if count else []
        parts = _parts_json(tail, tools_hash, heads, _letters(note.injected), None)
        if blobs:
            conn.executemany(_INSERT_BLOB, list(blobs.items()))
            add_fresh(fresh, note.session_id, _NODE_STORED, (node_pair[0],), set(blobs))
        found[response.id] = _encoder(note, parts, *call_pair)
    return found, fresh


def node_call_rows(
    conn: sqlite3.Connection,
    *,
    session_id: str | None = None,
    call_id: str | None = None,
    turn_index: int | None = None,
    last: int | None = None,
) -> list[dict[str, Any]]:
    """The calls kept on node rows that match, as rows in ``model_calls``' columns (with
    ``parts`` and ``detail`` parsed, and ``node``: the key of the row they ride on)."""
    conditions, params = ["call IS NOT NULL"], []
    if session_id is not None:
        session = session_key(conn, session_id, create=False)
        if session is None:
            return []
        conditions.append("session = ?")
        params.append(session)
    if call_id is not None:
        pair = split_id(call_id, CALL)
        if pair is None:
            return []
        conditions.append("node >= ?")
        conditions.append(
            "node - (json_extract(call, '$[0]') >> 20) = ? AND json_extract(call, '$[0]') & ? = ?"
        )
        params += [pair[0], pair[0], _MASK, pair[1]]
    if turn_index is not None:
        conditions.append("json_extract(call, '$[1]') = ?")
        params.append(turn_index)
    sql = f"SELECT node, tail, session, call FROM chain_nodes WHERE {' AND '.join(conditions)}"
    if last is not None and session_id is not None:
        # A session's calls are one after another: their answers' keys are in call order.
        sql += f" ORDER BY node DESC LIMIT {int(last)}"
    rows = conn.execute(sql, params).fetchall()
    if not rows:
        return []
    if session_id is not None:
        sessions = {rows[0][2]: session_id}
    else:
        sessions = dict(conn.execute("SELECT key, session_id FROM session_keys").fetchall())
    out = []
    for node, tail, session, text in rows:
        if session not in sessions:
            continue
        values = json.loads(text)
        packed = values[0]
        out.append(
            {
                "node": node,
                "session_id": sessions[session],
                "call_id": render(node - (packed >> 20), packed & _MASK, CALL),
                "slot_id": values[2],
                "turn_index": values[1],
                "kind": "turn",
                "model": values[3],
                "status": "ok",
                "prompt_tokens": values[4],
                "completion_tokens": values[5],
                "cost_usd": values[6],
                "started_us": node // 1000 - values[7],
                "latency_us": values[8],
                "ttft_us": values[11] if len(values) > 11 else None,
                "finish_reason": values[9],
                "request_hash": b"",
                "anchor_node": None,
                "response_id": render(node, tail, MESSAGE),
                "parts": values[10],
                "detail": values[12] if len(values) > 12 else {},
            }
        )
    return out


def clear_node_calls(conn: sqlite3.Connection, nodes: Sequence[int]) -> None:
    """Forget the calls riding on these node rows (their messages stay)."""
    conn.executemany("UPDATE chain_nodes SET call = NULL WHERE node = ?", [(n,) for n in nodes])


def forget_node_calls(conn: sqlite3.Connection, session_id: str) -> int:
    """Forget every call riding on a session's node rows; return how many there were."""
    session = session_key(conn, session_id, create=False)
    if session is None:
        return 0
    cursor = conn.execute(
        "UPDATE chain_nodes SET call = NULL WHERE session = ? AND call IS NOT NULL", (session,)
    )
    return int(cursor.rowcount)


def node_call_stamps(conn: sqlite3.Connection, session_id: str) -> list[tuple[str, int]]:
    """``(stamp of the call id, node key)`` of a session's calls on node rows."""
    return [(stamp(r["call_id"]), r["node"]) for r in node_call_rows(conn, session_id=session_id)]

"""Reading and clearing the model calls that ride on their answers' ``chain_nodes`` rows
(SQLite, schema 12; the column's layout and its writing: :mod:`agcore_lab.store._calls_lean`).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from agcore_lab.store._calls import stamp
from agcore_lab.store._node_keys import MESSAGE, render, session_key, split_id

__all__ = ["clear_node_calls", "forget_node_calls", "node_call_rows", "node_call_stamps"]

CALL = "call"
_MASK = (1 << 20) - 1


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
                "started_us": (node - (packed >> 20)) // 1000 - values[7],
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

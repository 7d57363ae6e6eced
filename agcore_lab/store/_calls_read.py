"""Reading model-call records back from SQLite (see :mod:`agcore_lab.store._calls`).

A call's request is rebuilt from its parts: messages kept by content in ``call_blobs``, then
the last messages of the chain ending at its anchor node. Chains are read once for many
calls along the same history (:class:`_Chains`); whether a call is on an abandoned branch is
whether its anchor is on a chain one of its session's slots ends in now; the checkpoint it led
to is the session's first checkpoint after it.
"""

from __future__ import annotations

import bisect
import json
import sqlite3
from datetime import timedelta
from typing import Any

from agcore_lab.errors import CorruptRecordError
from agcore_lab.llm.base import ToolSpec
from agcore_lab.llm.call_record import (
    EMPTY_FOLD,
    Fold,
    ModelCall,
    construct_call,
    finish_hash,
    fold,
    join_folds,
)
from agcore_lab.llm.messages import AssistantMessage, Message, MessageAdapter
from agcore_lab.llm.usage import Usage
from agcore_lab.store._call_blobs import TOOLS
from agcore_lab.store._calls import (
    _BLOB_ID,
    _EPOCH,
    _LABELS,
    calls_table,
    checkpoint_ids,
    stamp,
)
from agcore_lab.store._calls_lean_rows import node_call_rows
from agcore_lab.store._chains import read_chain

__all__ = ["read_calls"]


def _next_checkpoint(ckpts: list[str], stamps: list[str], row: dict[str, Any]) -> str | None:
    """The first checkpoint (of ``ckpts``, oldest first) made after the call of ``row``."""
    index = bisect.bisect_right(stamps, stamp(row["call_id"]))
    return ckpts[index] if index < len(ckpts) else None


class _Chains:
    """Loaded chains, so many calls along one history cost one chain read (and one pass of
    message digests for the request hashes derived at read time)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._chains: list[tuple[list[Message], list[str]]] = []
        self._where: dict[str, tuple[int, int]] = {}
        self._prefix_folds: dict[int, list[Fold]] = {}

    def _find(self, node_id: str) -> tuple[list[Message], list[str], int]:
        found = self._where.get(node_id)
        if found is None:
            chain = read_chain(self._conn, node_id)
            self._chains.append(([m for _, m in chain], [link.node_id for link, _ in chain]))
            number = len(self._chains) - 1
            for index, (link, _) in enumerate(chain):
                self._where.setdefault(link.node_id, (number, index))
            found = self._where.get(node_id, (number, len(chain) - 1))
        messages, nodes = self._chains[found[0]]
        return messages, nodes, found[1]

    def ending_at(self, node_id: str) -> list[Message]:
        messages, _, index = self._find(node_id)
        return messages[: index + 1]

    def fold_of(self, node_id: str, tail: int) -> Fold:
        """The fold of the last ``tail`` messages of the chain ending at ``node_id``."""
        found = self._where.get(node_id)
        if found is None:
            self._find(node_id)
            found = self._where[node_id]
        number, index = found
        start = index + 1 - tail
        if start > 0:  # a Focused window: a short slice
            return fold(self._chains[number][0][start : index + 1])
        folds = self._prefix_folds.setdefault(number, [EMPTY_FOLD])
        messages = self._chains[number][0]
        while len(folds) <= index + 1:
            folds.append(fold(messages[len(folds) - 1 : len(folds)], folds[-1]))
        return folds[index + 1]

    def nodes_of(self, head: str) -> set[str]:
        _, nodes, index = self._find(head)
        return set(nodes[: index + 1])


def _blobs(conn: sqlite3.Connection, hashes: set[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    ordered = sorted(hashes)
    for start in range(0, len(ordered), 500):
        batch = ordered[start : start + 500]
        rows = conn.execute(
            f"SELECT hash, body FROM call_blobs WHERE hash IN ({','.join('?' * len(batch))})",
            batch,
        )
        found.update((h, b) for h, b in rows)
    return found


def _responses(
    conn: sqlite3.Connection, ids: set[str], parents: dict[str, str]
) -> dict[str, AssistantMessage]:
    """The stored responses by id; ``parents`` gets each one's chain parent (the node the
    request's history ended at: a turn's call stores no anchor of its own)."""
    from agcore_lab.store._chains import _message

    found: dict[str, AssistantMessage] = {}
    if getattr(conn, "dialect", "sqlite") != "postgresql":
        from agcore_lab.store._chains import _built
        from agcore_lab.store._sqlite_chains import stored_messages

        for message, parent in stored_messages(conn, ids, _built):
            if isinstance(message, AssistantMessage):
                found[message.id] = message
                if parent is not None:
                    parents[message.id] = parent
        return found
    ordered = sorted(ids)
    for start in range(0, len(ordered), 500):
        batch = ordered[start : start + 500]
        cursor = conn.execute(
            f"SELECT * FROM messages WHERE message_id IN ({','.join('?' * len(batch))})", batch
        )
        cursor.row_factory = sqlite3.Row
        for row in cursor.fetchall():
            message = _message(row)
            if isinstance(message, AssistantMessage):
                found[message.id] = message
                if row["parent_id"] is not None:
                    parents[message.id] = row["parent_id"]
    return found


def _blob_message(body: str, digest: str, *, response: bool = False) -> Message:
    data = json.loads(body)
    if not response:
        data.setdefault("id", _BLOB_ID + digest)
        data.setdefault("created_at", _EPOCH.isoformat())
    return MessageAdapter.validate_python(data)


def _parts(text: str | list[Any] | dict[str, Any]) -> dict[str, Any]:
    parts = json.loads(text) if isinstance(text, str) else text
    if isinstance(parts, list):  # a turn's call: [t, T] or [t, T, [p...], i]
        named: dict[str, Any] = {"t": parts[0], "T": parts[1]}
        if len(parts) > 2:
            named["p"] = parts[2]
            if parts[3]:
                named["i"] = parts[3]
        return named
    return dict(parts)


def _table_rows(
    conn: sqlite3.Connection,
    *,
    session_id: str | None,
    call_id: str | None,
    turn_index: int | None,
    last: int | None,
) -> list[dict[str, Any]]:
    conditions, params = ["1 = 1"], []
    for column, value in (
        ("session_id", session_id),
        ("call_id", call_id),
        ("turn_index", turn_index),
    ):
        if value is not None:
            conditions.append(f"{column} = ?")
            params.append(value)
    sql = (
        f"SELECT * FROM {calls_table(conn)} WHERE {' AND '.join(conditions)} ORDER BY call_id DESC"
    )
    if last is not None:
        sql += f" LIMIT {int(last)}"
    cursor = conn.execute(sql, tuple(params))
    cursor.row_factory = sqlite3.Row
    rows = []
    for row in cursor.fetchall():
        found = dict(zip(row.keys(), tuple(row), strict=True))
        found["parts"] = _parts(row["parts_json"])
        found["detail"] = json.loads(row["detail_json"]) if row["detail_json"] else {}
        rows.append(found)
    return rows


def read_calls(
    conn: sqlite3.Connection,
    *,
    session_id: str | None = None,
    call_id: str | None = None,
    turn_index: int | None = None,
    last: int | None = None,
) -> list[ModelCall]:
    """The calls that match (every one given), oldest first; the newest ``last``.

    SQLite keeps a turn's common call on its answer's node row and the others in
    ``call_rows`` (:mod:`agcore_lab.store._calls_lean`): both are read, not the view.
    """
    rows = _table_rows(
        conn, session_id=session_id, call_id=call_id, turn_index=turn_index, last=last
    )
    if getattr(conn, "dialect", "sqlite") != "postgresql" and not (call_id and rows):
        riding = node_call_rows(
            conn, session_id=session_id, call_id=call_id, turn_index=turn_index, last=last
        )
        for row in riding:
            row["parts"] = _parts(row["parts"])
            rows.append(row)
        rows.sort(key=lambda r: str(r["call_id"]), reverse=True)
        if last is not None:
            del rows[last:]
    # Newest first: the newest head loads the longest chain first.
    parts = [r["parts"] for r in rows]
    hashes = {h for p in parts for h in [*p.get("p", []), p.get("T"), p.get("r")] if h}
    blobs = _blobs(conn, hashes)
    parents: dict[str, str] = {}
    responses = _responses(conn, {r["response_id"] for r in rows if r["response_id"]}, parents)
    chains = _Chains(conn)
    sessions = {r["session_id"] for r in rows}
    live = _live_nodes(conn, chains, sessions)
    ckpts = {
        sid: (ids, [stamp(c) for c in ids]) for sid, ids in checkpoint_ids(conn, sessions).items()
    }
    calls = [
        _call(
            r,
            p,
            blobs,
            responses,
            parents,
            chains,
            live,
            _next_checkpoint(*ckpts[r["session_id"]], r),
        )
        for r, p in zip(rows, parts, strict=True)
    ]
    calls.reverse()
    return calls


def _live_nodes(conn: sqlite3.Connection, chains: _Chains, sessions: set[str]) -> set[str]:
    nodes: set[str] = set()
    for session_id in sorted(sessions):
        heads = conn.execute(
            "SELECT head_node_id FROM slots WHERE session_id = ? AND head_node_id IS NOT NULL",
            (session_id,),
        ).fetchall()
        for (head,) in heads:
            nodes |= chains.nodes_of(head)
    return nodes


def _call(
    row: dict[str, Any],
    parts: dict[str, Any],
    blobs: dict[str, str],
    responses: dict[str, AssistantMessage],
    parents: dict[str, str],
    chains: _Chains,
    live: set[str],
    ckpt_id: str | None,
) -> ModelCall:
    request = [_blob_message(_blob(blobs, h, row), h) for h in parts.get("p", [])]
    tail = int(parts.get("t", 0))
    anchor = row["anchor_node"]
    if anchor is None and row["response_id"]:  # a turn's call: its answer's chain parent
        anchor = parents.get(row["response_id"])
    head = len(request)
    if tail and anchor:
        request += chains.ending_at(anchor)[-tail:]
    response: Message | None = None
    if row["response_id"]:
        response = responses.get(row["response_id"])
    elif parts.get("r"):
        response = _blob_message(_blob(blobs, parts["r"], row), parts["r"], response=True)
    detail = row["detail"]
    tools = _tools(blobs, parts["T"], row) if parts.get("T") else []
    params = detail.get("params", {})
    stored_hash = bytes(row["request_hash"])
    if stored_hash:
        digest = stored_hash.hex()
    else:  # derived from the parts: the same value the request as sent had
        folded = fold(request[:head])
        if len(request) > head:
            folded = join_folds(folded, chains.fold_of(anchor, len(request) - head))
        digest = finish_hash(folded, len(request), tools, row["model"], params)
    return construct_call(
        dict(
            call_id=row["call_id"],
            session_id=row["session_id"],
            slot_id=row["slot_id"],
            turn_index=row["turn_index"],
            kind=row["kind"],
            model=row["model"],
            params=params,
            request_messages=request,
            tools=tools,
            injected={i: _LABELS[c] for i, c in enumerate(parts.get("i", "")) if c in _LABELS},
            window_start=detail.get("window_start", 0),
            response=response if isinstance(response, AssistantMessage) else None,
            finish_reason=row["finish_reason"],
            usage=Usage(
                prompt_tokens=row["prompt_tokens"],
                completion_tokens=row["completion_tokens"],
                requests=detail.get("requests", 1),
            ),
            cost=row["cost_usd"],
            started_at=_EPOCH + timedelta(microseconds=row["started_us"]),
            latency_s=row["latency_us"] / 1_000_000,
            ttft_s=row["ttft_us"] / 1_000_000 if row["ttft_us"] is not None else None,
            streamed=detail.get("streamed", False),
            retries=detail.get("retries", 0),
            status=row["status"],
            error=detail.get("error"),
            replayed=detail.get("replayed", False),
            request_hash=digest,
            ckpt_id=ckpt_id,
            abandoned=anchor is not None and anchor not in live,
        )
    )


def _blob(blobs: dict[str, str], digest: str, row: dict[str, Any]) -> str:
    body = blobs.get(digest)
    if body is None:
        raise CorruptRecordError(
            f"model call {row['call_id']} refers to a stored part ({digest}) that is missing; "
            "the call log of this session is damaged (export what reads, then delete it)",
            table="model_calls",
            key=row["call_id"],
            session_id=row["session_id"],
        )
    return body


_PARSED_TOOLS: dict[str, list[ToolSpec]] = {}


def _tools(blobs: dict[str, str], digest: str, row: dict[str, Any]) -> list[ToolSpec]:
    # The same tools blob recurs in every call: parse it once (ToolSpecs are frozen).
    body = _blob(blobs, digest, row)
    parsed = _PARSED_TOOLS.get(digest)
    if parsed is None:
        parsed = TOOLS.validate_json(body)
        if len(_PARSED_TOOLS) >= 1_000:
            _PARSED_TOOLS.clear()
        _PARSED_TOOLS[digest] = parsed
    return list(parsed)

"""Model-call records as rows (SQLite ``call_rows``, PostgreSQL ``model_calls``): one lean row
per call, messages shared with the chains. On SQLite a turn's usual call is not a row: it
rides on its answer's node row (:mod:`agcore_lab.store._calls_lean`, schema 12), with the
same parts; ``model_calls`` is then the view over both.

A call row has flat, pandas-friendly columns (session, slot, turn, model, status,
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

import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import JsonValue

from agcore_lab.llm.call_note import SYSTEM_PROMPT_ONLY, CallNote, to_note
from agcore_lab.llm.call_record import ModelCall
from agcore_lab.store._call_blobs import (
    NOTHING,
    digest_of,
    interned,
    message_body,
    tools_body,
    write_blobs,
)
from agcore_lab.store._json import compact
from agcore_lab.store._sqlite_checkpoints import ids_of_session
from agcore_lab.store.base import LinkRecord

__all__ = [
    "add_fresh",
    "calls_table",
    "checkpoint_ids",
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
CALL_COLUMNS = (
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
    f"INSERT OR IGNORE INTO call_rows ({', '.join(CALL_COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(CALL_COLUMNS))})"
)
# PostgreSQL keeps the table's old name (SQLite's schema 12 made ``model_calls`` a view over
# ``call_rows`` and the calls kept on node rows, see _calls_lean).
_INSERT_CALL_PG = _INSERT_CALL.replace("INTO call_rows", "INTO model_calls")
_ROW_STORED = "SELECT 1 FROM call_rows WHERE session_id = ? AND call_id = ?"
# Per session, what a write's new blobs wait on (see Interned.tentative).
Fresh = dict[str, tuple[str, tuple[object, ...], set[str]]]


def calls_table(conn: sqlite3.Connection) -> str:
    """The table of call rows: ``call_rows`` on SQLite, ``model_calls`` on PostgreSQL."""
    return "model_calls" if getattr(conn, "dialect", "sqlite") == "postgresql" else "call_rows"


def add_fresh(
    fresh: Fresh, session_id: str, check: str, params: tuple[object, ...], blobs: set[str]
) -> None:
    """Note that ``blobs`` were written with the row ``check`` finds (one write: any of its
    rows tells that all of it committed)."""
    before = fresh.get(session_id)
    fresh[session_id] = (check, params, blobs | before[2] if before is not None else blobs)


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
    if injected is SYSTEM_PROMPT_ONLY:
        return "s"
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
    fresh: Fresh | None = None,
) -> None:
    """Insert call records or notes as rows (an id stored already is skipped).

    A call is anchored at the chain node its history tail ends at (or, with no tail, the
    slot's head when it was made), so a rollback past that node marks it abandoned.
    ``homes`` maps messages placed at home in the same transaction to their parent node.
    A note without a request hash is stored without one: the reader derives it. ``fresh``:
    blobs the same write stored already (for calls kept on node rows, see ``_calls_lean``).
    """
    state = interned(conn)
    fresh = dict(fresh) if fresh else {}
    if not calls:
        if state is not None:
            state.tentative.update(fresh)
        return
    if len(calls) == 1 and state is not None:  # the usual turn: one call, all known
        note = to_note(calls[0])
        blobs: dict[str, str] = {}
        row = _row(note, homes or {}, state.known(conn, note.session_id), blobs)
        if not blobs:
            conn.execute(_INSERT_CALL, row)
            state.tentative.update(fresh)
            return
    insert = _INSERT_CALL if state is not None else _INSERT_CALL_PG
    rows = []
    known: dict[str, set[str]] = {}
    for call in calls:
        note = to_note(call)
        sid = note.session_id
        if sid not in known:
            known[sid] = state.known(conn, sid) if state is not None else NOTHING
        blobs = {}
        rows.append(_row(note, homes or {}, known[sid], blobs))
        if blobs:
            write_blobs(conn, sid, blobs, pin=state is not None)  # pins: SQLite only
            add_fresh(fresh, sid, _ROW_STORED, (sid, note.call_id), set(blobs))
    conn.executemany(insert, rows)
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

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
7     start: the call id's clock in microseconds minus the call's start (0, as a rule)
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
import operator
import sqlite3
from collections.abc import Sequence

from agcore_lab.llm.base import ToolSpec
from agcore_lab.llm.call_note import SYSTEM_PROMPT_ONLY, CallNote
from agcore_lab.llm.call_record import ModelCall
from agcore_lab.llm.messages import Message
from agcore_lab.llm.replay import REPLAYED_KEY
from agcore_lab.llm.turn_calls import QuickCall, TurnCalls
from agcore_lab.llm.window import MessageWindow
from agcore_lab.store._call_blobs import (
    _MEMO,
    interned,
    message_body,
    tools_body,
    write_blobs,
)
from agcore_lab.store._calls import (
    Fresh,
    _detail,
    _heads,
    _letters,
    _parts_json,
    add_fresh,
)
from agcore_lab.store._node_keys import MESSAGE, split_id
from agcore_lab.store._sqlite_chains import MAX_CALL_OFFSET as _MAX_OFFSET
from agcore_lab.store.base import LinkRecord

__all__ = ["NodeCalls", "node_calls"]

_MASK = (1 << 20) - 1
_NODE_STORED = "SELECT 1 FROM chain_nodes WHERE node = ? AND call IS NOT NULL"

# What a turn's commit writes on node rows: message id -> its row's ``call`` column, or
# ``(call start, anchor, the column after its first value)`` for the chain insert to finish.
NodeCalls = dict[str, str | tuple[int, str, str]]

_TEXTS: dict[object, str] = {None: "null"}  # names as JSON (slot and model, finish reasons)


def _text(value: str | None) -> str:
    found = _TEXTS.get(value)
    if found is None:
        found = json.dumps(value, ensure_ascii=False)
        if len(_TEXTS) >= 1_000:
            _TEXTS.clear()
            _TEXTS[None] = "null"
        _TEXTS[value] = found
    return found


def _names(slot_id: str, model: str) -> str:
    found = _TEXTS.get((slot_id, model))
    if found is None:
        found = _TEXTS[(slot_id, model)] = f"{_text(slot_id)},{_text(model)}"
    return found


# (the parts after the tail count, the blobs they name as (digest, body), their digests)
_Shape = tuple[str, tuple[tuple[str, str], ...], frozenset[str]]


def _suffix(note: CallNote, count: int) -> _Shape | None:
    """The parts of a turn's usual request after its tail count — ``,"T"]`` or
    ``,"T",[p...],"i"]`` — and the blobs they name, or ``None`` for another shape. Kept per
    labels, head messages and tools (by object: the cache holds them, so their ids stay
    theirs)."""
    tools = note.tools
    if not tools:
        return None
    request = note.request
    if type(request) is MessageWindow and len(request.head) == count:
        heads = request.head  # the usual request: no look at the window's history
    else:
        heads = tuple(request[i] for i in range(count))
    return _shape(note.injected, heads, tools)


def _shape(
    injected: dict[int, str] | None, heads: tuple[Message, ...], tools: Sequence[ToolSpec]
) -> _Shape | None:
    """:func:`_suffix` of a request's head messages, their labels and the tools offered."""
    hot = _HOT[0]  # the shape of the previous call, as a rule this one's too
    if (
        hot is not None
        and injected is hot[0]
        and len(heads) == len(hot[1])
        and len(tools) == len(hot[2])
        and all(map(operator.is_, heads, hot[1]))
        and all(map(operator.is_, tools, hot[2]))
    ):
        return hot[3]
    letters = _letters(injected)
    key = (letters, *map(id, heads), 0, *map(id, tools))
    found = _SUFFIXES.get(key)
    if found is None:
        if letters and not heads:
            return None
        body, tools_hash = tools_body(tools)
        blobs = [(tools_hash, body)]
        for message in heads:
            message_text, digest = message_body(message)
            blobs.append((digest, message_text))
        whole = _parts_json(1, tools_hash, [d for d, _ in blobs[1:]], letters, None)
        assert whole.startswith("[1,")
        if len(_SUFFIXES) >= 1_000:
            _SUFFIXES.clear()
        digests = frozenset(digest for digest, _ in blobs)
        found = _SUFFIXES[key] = (whole[2:], tuple(blobs), digests, (heads, tuple(tools)))
    shape = (found[0], found[1], found[2])
    # The injected labels are compared by identity: the usual ones are a shared dict
    # (SYSTEM_PROMPT_ONLY) or None; the heads and tools are held here (their ids stay theirs).
    _HOT[0] = (injected, heads, list(tools), shape)
    return shape


# (injected labels, heads, tools, shape) of the last call _suffix worked out.
# The tools as a list: a turn's request offers a list, compared here with == (each item by
# identity first, then by value: equal tools have the same blob).
_HOT: list[tuple[object, tuple[Message, ...], list[ToolSpec], _Shape] | None] = [None]


# (labels, head ids, 0, tool ids) -> (the parts after the tail count, their blobs, the objects)
_SUFFIXES: dict[
    tuple[object, ...], tuple[str, tuple[tuple[str, str], ...], frozenset[str], object]
] = {}


def _parts(note: CallNote, tail: int, known: set[str], blobs: dict[str, str]) -> str:
    count = len(note.request) - tail
    if tail:
        shape = _suffix(note, count)
        if shape is not None:
            suffix, named, _ = shape
            for digest, body in named:
                if digest not in known:
                    blobs[digest] = body
            return f"[{tail}{suffix}"
    tools_hash = ""
    if note.tools:
        body, tools_hash = tools_body(note.tools)
        if tools_hash not in known:
            blobs[tools_hash] = body
    heads = _heads(note, count, known, blobs) if count else []
    return _parts_json(tail, tools_hash, heads, _letters(note.injected), None)


def node_calls(  # noqa: C901 (one pass on a turn's path: no helper calls for the usual call)
    conn: sqlite3.Connection,
    calls: Sequence[ModelCall | CallNote],
    links: Sequence[LinkRecord],
) -> tuple[NodeCalls, Fresh, int]:
    """The ``call`` column of the answers' node rows for the calls of a turn's commit that
    ride there (their recorder marked them ``rides``, and the answer is placed right after
    the request's history), by answer id; the blobs written for them here (those the
    store may not hold), for ``insert_calls(fresh=...)``; and how many calls there are (a
    recorder's length, read here from its entries: no call of its own). The other calls are
    left out."""
    found: NodeCalls = {}
    fresh: Fresh = {}
    known: set[str] | None = None
    # (the class, or a subclass such as the call recorder: no ABC instance check on this path)
    turn: TurnCalls | None = calls if TurnCalls in type(calls).__mro__ else None  # type: ignore[assignment]
    entries: Sequence[ModelCall | CallNote | QuickCall] = calls if turn is None else turn.entries
    count = len(entries)
    for index, note in enumerate(entries):
        if type(note) is tuple:  # a turn's usual call, as the turn noted it (TurnCalls)
            assert turn is not None
            header = turn.header
            _, heads, tail, tools, model, anchor, started, latency, reply, cost = note
            message, usage = reply.message, reply.usage
            # Its call column straight from the tuple, as ``(call start, anchor, the column
            # after its first value)``: the chain insert finishes it with the answer's node
            # key, or drops it if the answer is not placed right after the request's history
            # (:func:`~agcore_lab.store._sqlite_chains.insert_new`). Inline: this is the
            # turn's path. The plainest shape only; any other takes its note, below.
            # (cost - cost is 0.0 for a finite float only: the row's REAL column takes what
            # JSON cannot)
            if (
                type(cost) is float
                and cost - cost == 0.0
                and usage.requests == 1
                and anchor is not None
                and tail
                and REPLAYED_KEY not in message.metadata
            ):
                # The session's usual shape on this connection, its blobs confirmed stored
                # (``_MEMO``): as a rule this call's too. (The tools compared item by item:
                # the list may have changed since.)
                key = (conn, header[0], header[1], model, heads)
                memo = _MEMO[0]
                if memo is not None and memo[0] == key and tools == memo[1]:
                    usual: tuple[_Shape, str] | None = memo[2]
                else:
                    if known is None:  # what this connection knows of the session's blobs
                        state = interned(conn)
                        if state is None:  # not SQLite
                            return found, fresh, count
                        known = state.known(conn, header[0])
                    usual = _usual_shape(conn, known, key, tools, message.id, fresh)
                if usual is not None:
                    finish = reply.finish_reason
                    found[message.id] = (
                        started,
                        anchor,
                        f",{header[2]},{usual[1]},{usage.prompt_tokens},"
                        f"{usage.completion_tokens},{cost!r},0,{(latency + 500) // 1000},"
                        f"{_TEXTS.get(finish) or _text(finish)},[{tail}{usual[0][0]}]",
                    )
                    continue
            note = turn[index]  # any other shape: its note, written as below
        if not isinstance(note, CallNote) or not note.rides:
            continue
        response, value, cost = note.response, note.id_value, note.cost
        if response is None or value is None or note.tail is None:
            continue
        if type(cost) is not float or not math.isfinite(cost):
            continue  # the row's REAL column takes what JSON cannot
        response_id = response.id
        link = links[-1] if links else None  # the answer is the last message, as a rule
        if link is None or link.message_id != response_id:
            link = next((lk for lk in reversed(links) if lk.message_id == response_id), None)
        anchor, tail = note.tail
        if link is None or link.node_id != response_id or link.parent_node_id != anchor:
            continue  # not right after its history: a row of its own keeps its anchor
        pair = split_id(response_id, MESSAGE)
        call_key = value >> 20
        offset = pair[0] - call_key if pair is not None else -1
        if not 0 <= offset < _MAX_OFFSET:
            continue
        if known is None or note.session_id != (turn.header[0] if turn else None):
            state = interned(conn)
            if state is None:
                return found, fresh, count
            known = state.known(conn, note.session_id)
        blobs: dict[str, str] = {}
        shape = _suffix(note, len(note.request) - tail) if tail else None
        if shape is not None:
            for digest, body in shape[1]:
                if digest not in known:
                    blobs[digest] = body
            parts = f"[{tail}{shape[0]}"
        else:
            parts = _parts(note, tail, known, blobs)
        if blobs:
            write_blobs(conn, note.session_id, blobs)
            add_fresh(fresh, note.session_id, _NODE_STORED, (call_key + offset,), set(blobs))
        usage, started = note.usage, note.started_ns  # started: the id's clock, as a rule
        rare = ""
        if note.ttft_ns is not None or note.params or note.retries or note.streamed:
            rare = _rare(note)
        elif note.window_start or note.replayed or usage.requests != 1:
            rare = _rare(note)
        found[response_id] = (
            f"[{offset << 20 | value & _MASK},{note.turn_index},{_names(note.slot_id, note.model)},"
            f"{usage.prompt_tokens},{usage.completion_tokens},{cost!r},"
            f"{0 if started == call_key else call_key // 1000 - started // 1000},"
            f"{(note.latency_ns + 500) // 1000},"
            f"{_TEXTS.get(note.finish_reason) or _text(note.finish_reason)},{parts}{rare}]"
        )
    return found, fresh, count


def _first_blobs(
    conn: sqlite3.Connection,
    known: set[str],
    session_id: str,
    shape: _Shape,
    response_id: str,
    fresh: Fresh,
) -> bool:
    """Write the blobs of a usual call's ``shape`` that ``known`` lacks (a session's first
    call, as a rule), to be confirmed with the answer's node row; ``False`` (nothing
    written) if the answer's id is not of the usual form."""
    pair = split_id(response_id, MESSAGE)
    if pair is None:
        return False
    blobs = {digest: body for digest, body in shape[1] if digest not in known}
    write_blobs(conn, session_id, blobs)
    add_fresh(fresh, session_id, _NODE_STORED, (pair[0],), set(blobs))
    return True


def _usual_shape(
    conn: sqlite3.Connection,
    known: set[str],
    key: tuple[object, str, str, str, tuple[Message, ...]],
    tools: Sequence[ToolSpec],
    response_id: str,
    fresh: Fresh,
) -> tuple[_Shape, str] | None:
    """The shape of a usual call (``key``: its connection, session, slot, model and head
    messages) and its slot and model names as JSON, with the blobs ``known`` lacks written
    (:func:`_first_blobs`); ``None`` for a call of another shape. A shape whose blobs were
    all confirmed stored already is kept in ``_MEMO`` for the session's next calls."""
    heads = key[4]
    shape = _shape(SYSTEM_PROMPT_ONLY if heads else None, heads, tools) if tools else None
    if shape is None:
        return None
    usual = (shape, _names(key[2], key[3]))
    if shape[2] <= known:  # all confirmed: pinned to the session (see Interned)
        _MEMO[0] = (key, list(tools), usual)
        return usual
    return usual if _first_blobs(conn, known, key[1], shape, response_id, fresh) else None


def _rare(note: CallNote) -> str:
    """The call column's optional tail: ``,ttft`` and ``,{detail}`` (see the docstring)."""
    detail = _detail(note)
    ttft = (note.ttft_ns + 500) // 1000 if note.ttft_ns is not None else "null"
    if detail is not None:
        return f",{ttft},{detail}"
    return f",{ttft}" if note.ttft_ns is not None else ""

"""The SQLite listing (schema 11): checkpoint records built straight from their lean rows.

A lean ``checkpoint_rows`` row keeps the usual checkpoint — one slot, the current one; one
model whose totals are the checkpoint's — in integer columns (keys, offsets, name numbers).
:func:`lean_records` builds its :class:`~agcore_lab.store.base.CkptMeta` from those columns
with no text in between: the ids rendered a column at a time with numpy
(:mod:`~agcore_lab.store._lean_frame`), the times made from their integers, the slot and
spend records from the flat columns (or from their JSON, parsed once per distinct text:
:mod:`~agcore_lab.store._lean_parts`). Values are checked a column at a time against the
types a write leaves; what a user can change — each record's dicts, fields sets, slot and
spend records, pinned-id lists — is each record's own.

Every other row (a pending call, a time kept as text, a value not of the type the store
writes, as a hand edit may leave it, JSON not as written) is read as before: its text
columns written out (``_lean_frame.shaped_rows``) and read by
:func:`~agcore_lab.store._checkpoint_rows.read_checkpoints`'s rows path, which validates what
it cannot check and names a damaged row in a :class:`~agcore_lab.errors.CorruptRecordError`
— nothing is returned then.

The cyclic garbage collector is paused while the records are made (:mod:`._gc_pause`).
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from typing import Any

from agcore_lab.llm.usage import ModelSpend, Usage
from agcore_lab.store._checkpoint_rows import _records, read_checkpoints
from agcore_lab.store._gc_pause import paused_collector
from agcore_lab.store._lean_frame import head_ids, parent_ids, render_ids, shaped_rows
from agcore_lab.store._lean_parts import Parts
from agcore_lab.store._sqlite_checkpoint_reads import (
    keyed_rows,
    lean_names,
    lean_query,
    view_rows,
)
from agcore_lab.store._trusted import SET_DICT, SET_EXTRA, SET_FIELDS, SET_PRIVATE
from agcore_lab.store.base import CkptMeta, SlotRecord

__all__ = ["lean_records", "list_checkpoints"]

_NONE = type(None)
_INT, _OPT_INT = frozenset({int}), frozenset({int, _NONE})
_OPT_TEXT = frozenset({str, _NONE})
# The types a write leaves in each column of ``_sqlite_checkpoints._LEAN_SELECT``.
_WRITTEN = (
    _INT,  # ckpt
    _INT,  # tail
    frozenset({str}),  # session_id
    _OPT_INT,  # parent
    _OPT_INT,  # parent_tail
    _INT,  # turn_index
    _OPT_INT,  # created
    _OPT_TEXT,  # created_text
    _OPT_TEXT,  # label
    _INT,  # source
    _INT,  # message_count
    _INT,  # prompt_tokens
    _INT,  # completion_tokens
    frozenset({float}),  # cost_usd
    _INT,  # agent
    _INT,  # current_slot
    _OPT_INT,  # last_summary_turn
    _INT,  # memory_version
    _OPT_INT,  # head
    _OPT_INT,  # head_tail
    _OPT_INT,  # state
    _OPT_INT,  # model
    _OPT_INT,  # requests
    _OPT_TEXT,  # slots_json
    _OPT_TEXT,  # spend_json
    _OPT_TEXT,  # pending_json
)
_SOURCES = ("auto", "manual", "fork", "rollback")
_CKPT_FIELDS = set(CkptMeta.model_fields)
_SPEND_FIELDS = set(ModelSpend.model_fields)

# The four slots of a pydantic model instance, set through their own descriptors (what
# ``_checkpoint_plans.built`` does, inlined in the loop below).
_set_dict, _set_fields, _set_extra, _set_private = SET_DICT, SET_FIELDS, SET_EXTRA, SET_PRIVATE
_new = object.__new__


def list_checkpoints(
    conn: sqlite3.Connection,
    session_id: str | None,
    before: str | int | None,
    limit: int | None,
) -> list[CkptMeta]:
    """Checkpoints of one session (or all), newest first, older than ``before`` (an id or a
    turn index), at most ``limit``: ``SqliteStore.list_checkpoints`` on schema 11.

    Raises:
        CorruptRecordError: A row (or a slot state it names) is damaged: nothing is returned.
    """
    query = lean_query(conn, session_id, before, limit)
    if query is False:
        return []
    # Tens of thousands of objects, none of them garbage (see _gc_pause).
    with paused_collector():
        if query is True:
            return read_checkpoints(
                conn, "", [], rows=view_rows(conn, session_id, before, limit, None)
            )
        rows = conn.execute(*query).fetchall()
        return lean_records(conn, rows, lean_names(conn), session_id or None) if rows else []


def _typed(columns: list[tuple[Any, ...]], names: dict[int, str]) -> bool:
    """Whether every value of every column is of the type a write leaves there."""
    for column, allowed in zip(columns, _WRITTEN, strict=True):
        if not set(map(type, column)) <= allowed:
            return False
    keys = names.keys()
    return set(columns[9]) <= {0, 1, 2, 3} and set(columns[14]) <= keys and set(columns[15]) <= keys


def _row_typed(row: tuple[Any, ...], names: dict[int, str]) -> bool:
    return (
        all(type(v) in allowed for v, allowed in zip(row, _WRITTEN, strict=True))
        and row[9] in (0, 1, 2, 3)
        and row[14] in names
        and row[15] in names
    )


def lean_records(
    conn: sqlite3.Connection,
    rows: list[tuple[Any, ...]],
    names: dict[int, str],
    session_id: str | None = None,
) -> list[CkptMeta]:
    """The records of lean rows (``_sqlite_checkpoints._LEAN_SELECT``'s columns, newest
    first, no checkpoint id kept as text), in their order. ``session_id``: the session of
    every row, whose column is ``NULL`` (``_LEAN_SELECT_ONE``).

    Raises:
        CorruptRecordError: A row (or a slot state it names) is damaged: nothing is returned.
    """
    if not rows:
        return []
    columns = list(zip(*rows, strict=True))
    if session_id is not None:  # one str for every record, not a copy per row
        columns[2] = (session_id,) * len(rows)
    if _typed(columns, names):
        return _built(conn, rows, columns, names)
    if session_id is not None:
        rows = [(r[0], r[1], session_id, *r[3:]) for r in rows]
    # Some value is not of its written type (a hand edit): those rows go the other way.
    typed = [_row_typed(row, names) for row in rows]
    clean = [row for row, ok in zip(rows, typed, strict=True) if ok]
    made = iter(_built(conn, clean, list(zip(*clean, strict=True)), names) if clean else [])
    # Their values as the view shows them (shaped_rows expects the written types).
    damaged = keyed_rows(conn, [row[0] for row, ok in zip(rows, typed, strict=True) if not ok])
    others = iter(_records(conn, damaged))
    return [next(made) if ok else next(others) for ok in typed]


def _others(
    conn: sqlite3.Connection, rows: list[tuple[Any, ...]], names: dict[int, str]
) -> list[CkptMeta]:
    return _records(conn, shaped_rows(rows, names)) if rows else []


def _times(key: Any, created: tuple[Any, ...]) -> list[Any]:
    """Each row's ``created_at`` as a naive UTC ``datetime`` (``None``: kept as text, or out
    of ``datetime``'s range)."""
    import numpy as np  # lazy: keep `import agcore_lab` fast

    flat = np.fromiter((c is not None for c in created), dtype=bool, count=len(created))
    micros = np.zeros(len(key), dtype=np.int64)
    micros[flat] = np.fromiter((c for c in created if c is not None), dtype=np.int64)
    micros += key // 1000
    # numpy gives a datetime for a time in datetime's range and an int outside it.
    made: list[Any] = micros.astype("datetime64[us]").tolist()
    return [
        when if ok and type(when) is datetime else None
        for when, ok in zip(made, flat.tolist(), strict=True)
    ]


def _built(
    conn: sqlite3.Connection,
    rows: list[tuple[Any, ...]],
    columns: list[tuple[Any, ...]],
    names: dict[int, str],
) -> list[CkptMeta]:
    """The records of typed rows; the rows not as written go the other way."""
    import numpy as np

    key = np.fromiter(columns[0], dtype=np.int64, count=len(rows))
    ids = render_ids(key, np.fromiter(columns[1], dtype=np.int64, count=len(rows)), "ckpt")
    parts = Parts(conn, names)
    state_plans, state_plan, text_slots = parts.flat_states, parts.flat_state, parts.text_slots
    flat_usage, text_spend = parts.usage, parts.text_spend
    spend_fields = _SPEND_FIELDS
    last_figures: Any = None
    usage: Usage | None = None
    name = names.get
    sources = _SOURCES
    fields = _CKPT_FIELDS
    set_dict, set_fields, set_extra, set_private, new = (
        _set_dict,
        _set_fields,
        _set_extra,
        _set_private,
        _new,
    )
    records: list[CkptMeta | None] = []
    others: list[int] = []
    last_time: Any = None
    when: datetime | None = None
    for index, (
        ckpt_id,
        session_id,
        parent_id,
        parent,
        turn,
        naive,
        label,
        source,
        count,
        prompt,
        completion,
        cost,
        agent,
        slot,
        summary,
        memory,
        head_id,
        head,
        state,
        model,
        requests,
        slots_text,
        spend_text,
        pending,
    ) in enumerate(
        zip(
            ids.tolist(),
            columns[2],
            parent_ids(key, columns[3], columns[4]),
            columns[3],
            columns[5],
            _times(key, columns[6]),
            *columns[8:18],
            head_ids(key, columns[18], columns[19]),
            columns[18],
            *columns[20:],
            strict=True,
        )
    ):
        slot_id: Any = name(slot)  # a name: _typed checked that every slot number has one
        slots: dict[str, SlotRecord] | None
        if state is not None:  # one flat slot, the current one
            plan = state_plans[state] if state in state_plans else state_plan(state)
            if plan is None or (head is not None and head_id is None):
                slots = None
            else:
                values = plan[0].copy()
                values["session_id"] = session_id
                values["slot_id"] = slot_id
                values["head_node_id"] = head_id
                values["pinned_ids"] = list(plan[1])
                one_slot = new(SlotRecord)
                set_dict(one_slot, values)
                set_fields(one_slot, plan[2].copy())
                set_extra(one_slot, None)
                set_private(one_slot, None)
                slots = {slot_id: one_slot}
        else:
            slots = text_slots(slots_text, session_id)
        if model is not None:  # one flat model, its totals the row's
            figures = (prompt, completion, requests)
            if figures != last_figures:
                usage = flat_usage(figures)
                last_figures = figures
            model_name = name(model)
            if usage is None or model_name is None:
                spend = None
            else:
                one_spend = new(ModelSpend)
                set_dict(one_spend, {"usage": usage, "cost": cost})
                set_fields(one_spend, spend_fields.copy())
                set_extra(one_spend, None)
                set_private(one_spend, None)
                spend = {model_name: one_spend}
        else:
            spend = text_spend(spend_text)
        if (
            slots is None
            or spend is None
            or naive is None
            or pending is not None
            or (parent_id is None) is not (parent is None)
        ):
            # Not in the shape a write leaves: read as before (validated where it must be).
            records.append(None)
            others.append(index)
            continue
        if naive != last_time:
            when = naive.replace(tzinfo=UTC)
            last_time = naive
        record = new(CkptMeta)
        set_dict(
            record,
            {
                "ckpt_id": ckpt_id,
                "session_id": session_id,
                "parent_ckpt_id": parent_id,
                "turn_index": turn,
                "created_at": when,
                "label": label,
                "source": sources[source],
                "message_count": count,
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "cost_usd": cost,
                "agent_name": name(agent),
                "current_slot_id": slot_id,
                "last_summary_turn": summary,
                "memory_version": memory,
                "slots": slots,
                "spend": spend,
                "pending": None,
            },
        )
        set_fields(record, fields.copy())
        set_extra(record, None)
        set_private(record, None)
        records.append(record)
    if others:
        sessions = columns[2]  # the rows' own column may be NULL (lean_records)
        made = iter(
            _others(conn, [(*rows[i][:2], sessions[i], *rows[i][3:]) for i in others], names)
        )
        for index in others:
            records[index] = next(made)
    return records  # type: ignore[return-value]  # every None was replaced

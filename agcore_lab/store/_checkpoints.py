"""Checkpoints in SQLite: one lean row each, slot states stored once, restores in one go.

A ``checkpoints`` row has flat, pandas-friendly columns (turn, time, label, source, counts,
tokens, cost) plus ``slots_json``: for each slot, the chain node at its head and the hash of its
other state (mode, summary override, pins, fork point, ...). That state lives once per distinct
value in ``slot_states``, so a checkpoint costs the same at turn 1,000 as at turn 10.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic import TypeAdapter

from agcore_lab.checks import check_count
from agcore_lab.errors import CorruptRecordError, InvalidInputError
from agcore_lab.llm.usage import ModelSpend
from agcore_lab.store._checkpoint_flat import flat_slot_of, flat_spend_of
from agcore_lab.store._checkpoint_rows import COLUMNS as CHECKPOINT_COLUMNS
from agcore_lab.store._checkpoint_rows import checkpoint_base
from agcore_lab.store._iso import fresh_iso, iso
from agcore_lab.store._json import compact
from agcore_lab.store._sqlite_checkpoints import (
    base_and_ids,
    clear_checkpoints,
    write_checkpoint,
    write_checkpoints,
)
from agcore_lab.store._trusted import fields_of
from agcore_lab.store.base import CkptMeta, SessionRecord, SlotRecord

__all__ = [
    "checkpoint_page",
    "INSERT_SLOT",
    "SLOT_COLUMNS",
    "UPSERT_SLOT",
    "delete_checkpoints",
    "insert_checkpoint",
    "insert_checkpoints",
    "insert_turn_checkpoint",
    "replace_slots",
    "restore_memory",
    "slot_from_row",
    "slot_values",
]

_SLOT_STATE_FIELDS = (
    "parent_slot_id",
    "fork_point",
    "merge_base",
    "mode",
    "summary_override",
    "pinned_ids",
    "recent_window",
    "created_at",
    "merge_strategy",
)
_SPEND = TypeAdapter(dict[str, ModelSpend])


SLOT_COLUMNS = (
    "session_id",
    "slot_id",
    "parent_slot_id",
    "fork_point",
    "merge_base",
    "mode",
    "head_node_id",
    "summary_override",
    "pinned_json",
    "recent_window",
    "created_at",
    "updated_at",
    "merge_strategy",
)
INSERT_SLOT = (
    f"INSERT INTO slots ({', '.join(SLOT_COLUMNS)}) VALUES ({', '.join('?' * len(SLOT_COLUMNS))})"
)
"""The column-named insert of one ``slots`` row (the values of :func:`slot_values`)."""
# Updated in place (an existing row keeps its place and its key's index entry), on SQLite and
# PostgreSQL alike; INSERT OR REPLACE would delete and insert it again.
UPSERT_SLOT = f"{INSERT_SLOT} ON CONFLICT (session_id, slot_id) DO UPDATE SET " + ", ".join(
    f"{c} = excluded.{c}" for c in SLOT_COLUMNS[2:]
)
_CHECKPOINT_COLUMNS = CHECKPOINT_COLUMNS  # one list: the rows are read back by these names
_INSERT_CHECKPOINT = (
    f"INSERT INTO checkpoints ({', '.join(_CHECKPOINT_COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(_CHECKPOINT_COLUMNS))})"
)


def slot_values(slot: SlotRecord, session_id: str) -> tuple[Any, ...]:
    """The row of ``slots`` for ``slot`` in ``session_id`` (in :data:`SLOT_COLUMNS` order)."""
    f = fields_of(slot)
    return (
        session_id,
        f["slot_id"],
        f["parent_slot_id"],
        f["fork_point"],
        f["merge_base"],
        getattr(f["mode"], "value", f["mode"]),  # a str (an enum member binds slowly)
        f["head_node_id"],
        f["summary_override"],
        compact(f["pinned_ids"]),
        f["recent_window"],
        iso(f["created_at"]),  # the same object in every commit and checkpoint of the slot
        fresh_iso(f["updated_at"]),  # often the object its session's row has too
        f["merge_strategy"],
    )


def slot_from_row(row: sqlite3.Row) -> SlotRecord:
    """The ``SlotRecord`` of a row of ``slots``.

    Raises:
        CorruptRecordError: The row does not parse (bad JSON, a bad timestamp, bad fields).
    """
    try:
        return SlotRecord.model_validate(
            {**dict(row), "pinned_ids": json.loads(row["pinned_json"])}
        )
    except (ValueError, TypeError) as exc:  # ValidationError is a ValueError
        raise CorruptRecordError(
            f"stored slot {row['slot_id']!r} cannot be read: {exc}; the row is left as it is",
            table="slots",
            key=f"{row['session_id']}/{row['slot_id']}",
            session_id=row["session_id"],
            slot_id=row["slot_id"],
        ) from exc


def replace_slots(conn: sqlite3.Connection, session_id: str, slots: Sequence[SlotRecord]) -> None:
    """Make ``session_id`` have exactly ``slots``."""
    conn.execute("DELETE FROM slots WHERE session_id = ?", (session_id,))
    conn.executemany(INSERT_SLOT, [slot_values(s, session_id) for s in slots])


_INSERT_STATE = "INSERT OR IGNORE INTO slot_states (state_hash, state_json) VALUES (?, ?)"


def _state(slot: SlotRecord) -> tuple[str, str]:
    # A slot's state (what a checkpoint restores of it) as its digest and its JSON text;
    # the same state recurs (a session's every checkpoint, the children made together), so
    # each distinct one is serialized and hashed once. The key holds each value's type and
    # the time's text: values that compare equal but serialize apart (1 and True, one
    # moment in two time zones) get their own entries.
    fields = fields_of(slot)
    values = [fields[name] for name in _SLOT_STATE_FIELDS]
    kinds = tuple(map(type, values))
    try:
        values[5], values[7] = tuple(values[5]), iso(values[7])  # pins, created_at
        key: tuple[Any, ...] | None = (*values, kinds)
        known = _STATES.get(key)  # type: ignore[arg-type]
    except (TypeError, AttributeError):  # not the usual values (a constructed record)
        key = known = None
    if known is not None:
        return known
    state = slot.model_dump(mode="json", include=set(_SLOT_STATE_FIELDS))
    if state["merge_strategy"] is None:  # absent, as in states stored before it existed
        del state["merge_strategy"]
    text = compact(state)
    known = hashlib.blake2b(text.encode(), digest_size=8).hexdigest(), text
    if key is not None:
        if len(_STATES) >= 1_000:
            _STATES.clear()
        _STATES[key] = known
    return known


_STATES: dict[tuple[Any, ...], tuple[str, str]] = {}  # slot state -> (digest, JSON text)


def _state_hash(conn: sqlite3.Connection, slot: SlotRecord) -> str:
    digest, text = _state(slot)
    conn.execute(_INSERT_STATE, (digest, text))
    return digest


def _spend_compact(spend: dict[str, ModelSpend]) -> str:
    return compact(
        {
            model: [s.usage.prompt_tokens, s.usage.completion_tokens, s.usage.requests, s.cost]
            for model, s in spend.items()
        }
    )


def insert_checkpoint(conn: sqlite3.Connection, ckpt: CkptMeta) -> None:
    """Insert one checkpoint row (and any slot state not stored yet)."""
    slots = {sid: [s.head_node_id, _state_hash(conn, s)] for sid, s in ckpt.slots.items()}
    if getattr(conn, "dialect", "sqlite") != "postgresql":
        _insert_lean(conn, ckpt, slots)
        return
    _plain_insert(
        conn,
        _old_columns(ckpt, ckpt.created_at.isoformat(), compact(slots), _spend_compact(ckpt.spend)),
    )


def _plain_insert(conn: sqlite3.Connection, row: tuple[Any, ...]) -> None:
    conn.execute(_INSERT_CHECKPOINT, row)


def insert_turn_checkpoint(conn: sqlite3.Connection, ckpt: CkptMeta) -> tuple[str | None, int]:
    """Insert a turn's checkpoint with its parent set to the session's latest checkpoint and
    its memory version to the session's, both read in the caller's transaction (on SQLite in
    the statement that reads what the row needs); return them."""
    if getattr(conn, "dialect", "sqlite") == "postgresql":
        latest, memory_at = checkpoint_base(conn, ckpt.session_id)
        read = {"parent_ckpt_id": latest, "memory_version": memory_at}
        insert_checkpoint(conn, ckpt.model_copy(update=read))
        return latest, memory_at
    states = [_state(slot) for slot in ckpt.slots.values()]
    slots = {
        sid: [slot.head_node_id, state[0]]
        for (sid, slot), state in zip(ckpt.slots.items(), states, strict=True)
    }
    row, known = _lean_row(ckpt, slots)
    latest, memory_at, found, stored = base_and_ids(conn, row, known)
    if not stored:  # the slot state changed since the latest checkpoint (or is not flat)
        conn.executemany(_INSERT_STATE, states)
    write_checkpoint(conn, (*row[:2], latest, *row[3:14], memory_at, *row[15:]), known, found)
    return latest, memory_at


def insert_checkpoints(conn: sqlite3.Connection, ckpts: Sequence[CkptMeta]) -> None:
    """Insert many checkpoints (the first ones of sessions made together): on SQLite each
    distinct slot state written once, and the rows in one ``executemany``
    (``write_checkpoints``)."""
    if len(ckpts) < 2 or getattr(conn, "dialect", "sqlite") == "postgresql":
        for ckpt in ckpts:
            insert_checkpoint(conn, ckpt)
        return
    states: dict[str, str] = {}
    rows = []
    for ckpt in ckpts:
        slots: dict[str, list[Any]] = {}
        for sid, slot in ckpt.slots.items():
            digest, text = _state(slot)
            states[digest] = text
            slots[sid] = [slot.head_node_id, digest]
        rows.append(_lean_row(ckpt, slots))
    conn.executemany(_INSERT_STATE, list(states.items()))
    write_checkpoints(conn, rows)


def _insert_lean(conn: sqlite3.Connection, ckpt: CkptMeta, slots: dict[str, list[Any]]) -> None:
    # SQLite's schema 11: the same row, stored lean (write_checkpoint).
    write_checkpoint(conn, *_lean_row(ckpt, slots))


def _lean_row(
    ckpt: CkptMeta, slots: dict[str, list[Any]]
) -> tuple[tuple[Any, ...], tuple[Any, Any]]:
    # The row in the old columns and whether its slots and spend are flat, decided on the
    # values: their JSON is written only when it is stored.
    figures = {
        model: (s.usage.prompt_tokens, s.usage.completion_tokens, s.usage.requests, s.cost)
        for model, s in ckpt.spend.items()
    }
    flat = flat_slot_of(slots, ckpt.current_slot_id)
    spent = flat_spend_of(figures, ckpt.prompt_tokens, ckpt.completion_tokens, ckpt.cost_usd)
    created = ckpt.created_at  # a datetime stands for its isoformat (not parsed back)
    return (
        _old_columns(
            ckpt,
            created if type(created) is datetime else created.isoformat(),
            None if flat is not None else compact(slots),
            None if spent is not None else _spend_compact(ckpt.spend),
        ),
        (flat, spent),
    )


def _old_columns(
    ckpt: CkptMeta, created: datetime | str, slots: str | None, spend: str | None
) -> tuple[Any, ...]:
    # A checkpoint's row in the columns of the ``checkpoints`` table (PostgreSQL) and view
    # (SQLite), with its time, slots and spend as the caller stores them.
    f = fields_of(ckpt)
    pending = f["pending"]
    return (
        f["session_id"],
        f["ckpt_id"],
        f["parent_ckpt_id"],
        f["turn_index"],
        created,
        f["label"],
        f["source"],
        f["message_count"],
        f["prompt_tokens"],
        f["completion_tokens"],
        f["cost_usd"],
        f["agent_name"],
        f["current_slot_id"],
        f["last_summary_turn"],
        f["memory_version"],
        slots,
        spend,
        pending.to_stored().model_dump_json() if pending is not None else None,
    )


def checkpoint_page(
    session_id: str | None, limit: int | None, before: str | int | None
) -> tuple[str, list[Any], int | None]:
    """The condition, parameters and limit of one page of a listing (newest first).

    Raises:
        InvalidInputError: ``limit`` is not an int >= 1, or ``before`` is neither a checkpoint
            id (``str``) nor a turn index (``int``).
    """
    limit = check_count(limit, "limit", optional=True)
    conditions: list[str] = ["1 = 1"]
    params: list[Any] = []
    if session_id:  # as before paging: None (or "") lists every session's
        conditions.append("session_id = ?")
        params.append(session_id)
    if isinstance(before, str):
        conditions.append("ckpt_id < ?")
        params.append(before)
    elif isinstance(before, int) and not isinstance(before, bool):
        conditions.append("turn_index < ?")
        params.append(before)
    elif before is not None:
        raise InvalidInputError(
            "before must be a checkpoint id (str: the checkpoints older than it) or a turn "
            f"index (int: the checkpoints of earlier turns), got {type(before).__name__}"
        )
    return " AND ".join(conditions), params, limit


def delete_checkpoints(
    conn: sqlite3.Connection, session_id: str, ckpt_ids: Sequence[str] | None
) -> int:
    """Delete a session's checkpoints (all, or those listed); return how many."""
    if getattr(conn, "dialect", "sqlite") != "postgresql":
        return clear_checkpoints(conn, session_id, ckpt_ids)
    if ckpt_ids is None:
        return conn.execute("DELETE FROM checkpoints WHERE session_id = ?", (session_id,)).rowcount
    removed = 0
    for ckpt_id in ckpt_ids:
        removed += conn.execute(
            "DELETE FROM checkpoints WHERE session_id = ? AND ckpt_id = ?", (session_id, ckpt_id)
        ).rowcount
    return removed


def restore_memory(
    conn: sqlite3.Connection, source_session: str, version: int, target: SessionRecord, now: str
) -> int:
    """Append memory writes that make ``target``'s live memory equal ``source_session``'s
    memory as of ``version``; return the target's memory version afterwards."""
    wanted = {
        r[0]: r[1:]
        for r in conn.execute(
            """SELECT m.key, m.value_json, m.metadata_json, m.created_at FROM memory_log m
               WHERE m.session_id = ?1 AND m.deleted = 0 AND m.version = (
                   SELECT max(version) FROM memory_log l
                   WHERE l.session_id = ?1 AND l.key = m.key AND l.version <= ?2)""",
            (source_session, version),
        )
    }
    current = {
        r[0]: r[1:]
        for r in conn.execute(
            "SELECT key, value_json, metadata_json, created_at FROM memory WHERE session_id = ?",
            (target.session_id,),
        )
    }
    latest = conn.execute(
        "SELECT coalesce(max(version), 0) FROM memory_log WHERE session_id = ?",
        (target.session_id,),
    ).fetchone()[0]
    for key in sorted(set(wanted) | set(current)):
        if key in wanted and current.get(key) == wanted[key]:
            continue
        latest += 1
        if key in wanted:
            value, metadata, created = wanted[key]
            conn.execute(
                "INSERT INTO memory_log (session_id, version, key, value_json, metadata_json, "
                "created_at, updated_at, deleted) VALUES (?, ?, ?, ?, ?, ?, ?, 0)",
                (target.session_id, latest, key, value, metadata, created, now),
            )
        else:
            conn.execute(
                "INSERT INTO memory_log (session_id, version, key, value_json, metadata_json, "
                "created_at, updated_at, deleted) VALUES (?, ?, ?, NULL, '{}', ?, ?, 1)",
                (target.session_id, latest, key, now, now),
            )
    return int(latest)

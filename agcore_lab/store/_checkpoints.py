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
from typing import Any

from pydantic import TypeAdapter, ValidationError

from agcore_lab.errors import CorruptRecordError
from agcore_lab.llm.usage import ModelSpend
from agcore_lab.store._json import compact
from agcore_lab.store.base import CkptMeta, SessionRecord, SlotRecord
from agcore_lab.store.pending import state_from_json

__all__ = [
    "delete_checkpoints",
    "insert_checkpoint",
    "read_checkpoints",
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


def slot_values(slot: SlotRecord, session_id: str) -> tuple[Any, ...]:
    """The row of ``slots`` for ``slot`` in ``session_id``."""
    return (
        session_id,
        slot.slot_id,
        slot.parent_slot_id,
        slot.fork_point,
        slot.merge_base,
        slot.mode,
        slot.head_node_id,
        slot.summary_override,
        compact(slot.pinned_ids),
        slot.recent_window,
        slot.created_at.isoformat(),
        slot.updated_at.isoformat(),
        slot.merge_strategy,
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
    conn.executemany(
        "INSERT INTO slots VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
        [slot_values(s, session_id) for s in slots],
    )


def _state_hash(conn: sqlite3.Connection, slot: SlotRecord) -> str:
    state = slot.model_dump(mode="json", include=set(_SLOT_STATE_FIELDS))
    if state["merge_strategy"] is None:  # absent, as in states stored before it existed
        del state["merge_strategy"]
    text = compact(state)
    digest = hashlib.blake2b(text.encode(), digest_size=8).hexdigest()
    conn.execute("INSERT OR IGNORE INTO slot_states VALUES (?, ?)", (digest, text))
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
    conn.execute(
        "INSERT INTO checkpoints VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (
            ckpt.session_id,
            ckpt.ckpt_id,
            ckpt.parent_ckpt_id,
            ckpt.turn_index,
            ckpt.created_at.isoformat(),
            ckpt.label,
            ckpt.source,
            ckpt.message_count,
            ckpt.prompt_tokens,
            ckpt.completion_tokens,
            ckpt.cost_usd,
            ckpt.agent_name,
            ckpt.current_slot_id,
            ckpt.last_summary_turn,
            ckpt.memory_version,
            compact(slots),
            _spend_compact(ckpt.spend),
            ckpt.pending.to_stored().model_dump_json() if ckpt.pending is not None else None,
        ),
    )


def _corrupt(row: sqlite3.Row, what: str, exc: BaseException) -> CorruptRecordError:
    return CorruptRecordError(
        f"stored checkpoint {row['ckpt_id']!r} cannot be read ({what}: {exc}); the row is left "
        "as it is (delete it with delete_checkpoints, or restore the file from a backup)",
        table="checkpoints",
        key=row["ckpt_id"],
        session_id=row["session_id"],
        checkpoint_id=row["ckpt_id"],
    )


def _from_row(row: sqlite3.Row, states: dict[str, dict[str, Any]]) -> CkptMeta:
    # Plain dicts, validated once by pydantic's core (much faster than building the nested
    # models one by one): the flat columns map onto fields by name, JSON columns are decoded.
    session_id = row["session_id"]
    pending = None
    if row["pending_json"]:
        pending = state_from_json(
            row["pending_json"],
            table="checkpoints",
            key=row["ckpt_id"],
            session_id=session_id,
            checkpoint_id=row["ckpt_id"],
        )
    try:
        slots = {
            slot_id: {
                "session_id": session_id,
                "slot_id": slot_id,
                "head_node_id": head,
                **states[d],
            }
            for slot_id, (head, d) in json.loads(row["slots_json"]).items()
        }
        spend = {
            model: {
                "usage": {"prompt_tokens": p, "completion_tokens": c, "requests": r},
                "cost": cost,
            }
            for model, (p, c, r, cost) in json.loads(row["spend_json"]).items()
        }
        return CkptMeta.model_validate(
            {**dict(row), "slots": slots, "spend": spend, "pending": pending}
        )
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:3]
        )
        raise _corrupt(row, "invalid fields", ValueError(problems)) from exc
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise _corrupt(row, "invalid slots or spend JSON", exc) from exc


def _slot_digests(row: sqlite3.Row) -> set[str]:
    try:
        return {d for _, d in json.loads(row["slots_json"]).values()}
    except (ValueError, TypeError, AttributeError) as exc:
        raise _corrupt(row, "invalid slots JSON", exc) from exc


def read_checkpoints(
    conn: sqlite3.Connection, where: str, params: Sequence[Any], limit: int | None = None
) -> list[CkptMeta]:
    """Checkpoints matching ``where`` (an SQL condition), newest first, at most ``limit``."""
    sql = f"SELECT * FROM checkpoints WHERE {where} ORDER BY ckpt_id DESC"
    cursor = conn.execute(
        sql if limit is None else sql + " LIMIT ?",
        tuple(params) if limit is None else (*params, limit),
    )
    cursor.row_factory = sqlite3.Row
    rows = cursor.fetchall()
    digests = {d for r in rows for d in _slot_digests(r)}
    states: dict[str, dict[str, Any]] = {}
    for digest in digests:
        found = conn.execute(
            "SELECT state_json FROM slot_states WHERE state_hash = ?", (digest,)
        ).fetchone()
        if found is None:
            continue  # the checkpoint naming it is reported by _from_row
        try:
            states[digest] = json.loads(found[0])
        except ValueError as exc:
            raise CorruptRecordError(
                f"stored slot state {digest!r} is not valid JSON: {exc}",
                table="slot_states",
                key=digest,
            ) from exc
    return [_from_row(r, states) for r in rows]


def delete_checkpoints(
    conn: sqlite3.Connection, session_id: str, ckpt_ids: Sequence[str] | None
) -> int:
    """Delete a session's checkpoints (all, or those listed); return how many."""
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
                "INSERT INTO memory_log VALUES (?,?,?,?,?,?,?,0)",
                (target.session_id, latest, key, value, metadata, created, now),
            )
        else:
            conn.execute(
                "INSERT INTO memory_log VALUES (?,?,?,NULL,'{}',?,?,1)",
                (target.session_id, latest, key, now, now),
            )
    return int(latest)

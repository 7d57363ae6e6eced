"""Reading checkpoint rows back into records, fast: rows the store wrote are not validated again.

Every ``checkpoints`` row was written from a validated :class:`~agcore_lab.store.base.CkptMeta`
(``insert_checkpoint`` takes nothing else), so a read only checks that each column still has
the type it was written with (one set lookup of the row's column types) and builds the
records directly (:func:`~agcore_lab.store._checkpoint_plans.built`, the few assignments
pydantic's own constructor makes). The JSON columns are parsed and checked once per distinct
text in a read (:mod:`~agcore_lab.store._checkpoint_plans`); each record still gets slot and
spend records of its own. A row that fails a check (edited by hand, damaged on disk) goes
through full validation instead, which names what is wrong in a
:class:`~agcore_lab.errors.CorruptRecordError` — when it is read, never later.
"""

from __future__ import annotations

import gc
import json
import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic import ValidationError
from pydantic_core import from_json

from agcore_lab.errors import CorruptRecordError
from agcore_lab.ids import utcnow
from agcore_lab.llm.usage import ModelSpend
from agcore_lab.store._checkpoint_plans import (
    SlotPlan,
    SpendPlan,
    Unchecked,
    built,
    checked_state,
    slot_plan,
    spend_plan,
    stamp,
)
from agcore_lab.store.base import CkptMeta, SlotRecord
from agcore_lab.store.pending import state_from_json

__all__ = ["COLUMNS", "latest_checkpoint_id", "read_checkpoints"]

COLUMNS = (
    "session_id",
    "ckpt_id",
    "parent_ckpt_id",
    "turn_index",
    "created_at",
    "label",
    "source",
    "message_count",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "agent_name",
    "current_slot_id",
    "last_summary_turn",
    "memory_version",
    "slots_json",
    "spend_json",
    "pending_json",
)
_SELECT = ", ".join(COLUMNS)
_SOURCES = frozenset({"auto", "manual", "fork", "rollback"})
# Each record owns a copy of its model's (full) fields set: model_fields_set hands it out.
_CKPT_FIELDS = set(CkptMeta.model_fields)
_SLOT_FIELDS = set(SlotRecord.model_fields)
_SPEND_FIELDS = set(ModelSpend.model_fields)
_TEXT, _INT, _NONE = str, int, type(None)
# The column types of a row as insert_checkpoint writes it (one per optional column's two
# possibilities), for one set lookup per row. A row with a pending call is not among them:
# that state is parsed strictly by the validated path.
_WRITTEN_TYPES = frozenset(
    (_TEXT, _TEXT, parent, _INT, _TEXT, label, _TEXT, _INT, _INT, _INT, float, _TEXT, _TEXT)
    + (summary, _INT, _TEXT, _TEXT, _NONE)
    for parent in (_TEXT, _NONE)
    for label in (_TEXT, _NONE)
    for summary in (_INT, _NONE)
)


def _corrupt(row: dict[str, Any], what: str, exc: BaseException) -> CorruptRecordError:
    return CorruptRecordError(
        f"stored checkpoint {row['ckpt_id']!r} cannot be read ({what}: {exc}); the row is left "
        "as it is (delete it with delete_checkpoints, or restore the file from a backup)",
        table="checkpoints",
        key=row["ckpt_id"],
        session_id=row["session_id"],
        checkpoint_id=row["ckpt_id"],
    )


def _validated(row: dict[str, Any], states: dict[str, Any]) -> CkptMeta:
    # Full validation by pydantic: the path of rows that failed a check, and of rows with a
    # pending call. Names what is wrong.
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
        return CkptMeta.model_validate({**row, "slots": slots, "spend": spend, "pending": pending})
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:3]
        )
        raise _corrupt(row, "invalid fields", ValueError(problems)) from exc
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise _corrupt(row, "invalid slots or spend JSON", exc) from exc


def _states(conn: sqlite3.Connection, digests: set[str]) -> dict[str, dict[str, Any]]:
    states: dict[str, dict[str, Any]] = {}
    for digest in digests:
        found = conn.execute(
            "SELECT state_json FROM slot_states WHERE state_hash = ?", (digest,)
        ).fetchone()
        if found is None:
            continue  # the checkpoint naming it is reported when it is read
        try:
            states[digest] = json.loads(found[0])
        except ValueError as exc:
            raise CorruptRecordError(
                f"stored slot state {digest!r} is not valid JSON: {exc}",
                table="slot_states",
                key=digest,
            ) from exc
    return states


def _heads(text: object, row: Sequence[Any]) -> dict[str, Any]:
    """A row's ``slots_json``: slot id -> [head node, state digest]."""
    try:
        heads = from_json(text)  # type: ignore[arg-type]  # not text: a TypeError, reported
        if type(heads) is not dict:
            raise TypeError(f"an object was expected, not {type(heads).__name__}")
        return heads
    except (ValueError, TypeError) as exc:
        raise _corrupt(dict(zip(COLUMNS, row, strict=True)), "invalid slots JSON", exc) from exc


def _slot_plans(
    conn: sqlite3.Connection, rows: list[tuple[Any, ...]], read_at: datetime
) -> tuple[dict[tuple[str, str], SlotPlan | None], dict[str, dict[str, Any]]]:
    """The plan of each distinct (slots text, session) of ``rows``, and the slot states
    they name (as stored, for the validated path)."""
    heads: dict[tuple[Any, Any], dict[str, Any]] = {}
    for row in rows:
        key = (row[15], row[0])
        if key not in heads:
            heads[key] = _heads(row[15], row)
    digests = {
        pair[1]
        for slots in heads.values()
        for pair in slots.values()
        if type(pair) is list and len(pair) == 2 and type(pair[1]) is str
    }
    states = _states(conn, digests)
    checked = {}
    for digest, state in states.items():
        try:
            checked[digest] = checked_state(state)
        except Unchecked:
            pass  # its checkpoints take the validated path, which names the problem
    plans = {
        key: slot_plan(slots, key[1], checked, read_at) if type(key[1]) is str else None
        for key, slots in heads.items()
    }
    return plans, states


def _when(text: object) -> datetime | None:
    try:
        return stamp(text)
    except Unchecked:
        return None


# What a read prepared: the plan of each (slots text, session), of each spend text, and the
# time of each created_at text (None: it failed a check).
_Plans = tuple[
    dict[tuple[str, str], SlotPlan | None], dict[Any, SpendPlan | None], dict[Any, datetime | None]
]


def _planned(row: tuple[Any, ...], plans: _Plans) -> bool:
    # Whether a row's slots, spend and time passed their checks (each checked once per text).
    slot_plans, spend_plans, times = plans
    return (
        slot_plans[row[15], row[0]] is not None
        and spend_plans[row[16]] is not None
        and times[row[4]] is not None
    )


def read_checkpoints(
    conn: sqlite3.Connection, where: str, params: Sequence[Any], limit: int | None = None
) -> list[CkptMeta]:
    """Checkpoints matching ``where`` (an SQL condition), newest first, at most ``limit``.

    Raises:
        CorruptRecordError: A row (or a slot state it names) is damaged: nothing is returned.
    """
    sql = f"SELECT {_SELECT} FROM checkpoints WHERE {where} ORDER BY ckpt_id DESC"
    cursor = conn.execute(
        sql if limit is None else sql + " LIMIT ?",
        tuple(params) if limit is None else (*params, limit),
    )
    rows: list[tuple[Any, ...]] = cursor.fetchall()
    if rows and type(rows[0]) is not tuple:
        rows = [tuple(r) for r in rows]  # another backend's row objects
    # Tens of thousands of small objects, none of them garbage: the cyclic collector would
    # rescan them over and over while they are made (it doubled the time of a long listing).
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _records(conn, rows)
    finally:
        if collecting:
            gc.enable()


def _records(conn: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> list[CkptMeta]:
    slot_plans, states = _slot_plans(conn, rows, utcnow())
    spend_plans = {text: spend_plan(text) for text in {row[16] for row in rows}}
    times = {text: _when(text) for text in {row[4] for row in rows}}
    plans = (slot_plans, spend_plans, times)
    checked = None not in slot_plans.values()
    checked = checked and None not in spend_plans.values() and None not in times.values()
    written, sources = _WRITTEN_TYPES, _SOURCES
    ckpt_fields, slot_fields, spend_fields = _CKPT_FIELDS, _SLOT_FIELDS, _SPEND_FIELDS
    records = []
    for row in rows:
        if (
            tuple(map(type, row)) in written
            and row[6] in sources
            and (checked or _planned(row, plans))
        ):
            (sid, cid, parent, turn, created, label, source, count, prompt, completion) = row[:10]
            cost, agent, slot, summary, memory, slots_text, spend_text = row[10:17]
            slots = {}
            for slot_id, values, pinned in slot_plans[slots_text, sid]:  # type: ignore[union-attr]
                own = values.copy()
                own["pinned_ids"] = list(pinned)
                slots[slot_id] = built(SlotRecord, own, slot_fields.copy())
            spend = {
                model: built(ModelSpend, {"usage": usage, "cost": spent}, spend_fields.copy())
                for model, usage, spent in spend_plans[spend_text]  # type: ignore[union-attr]
            }
            record = built(
                CkptMeta,
                {
                    "ckpt_id": cid,
                    "session_id": sid,
                    "parent_ckpt_id": parent,
                    "turn_index": turn,
                    "created_at": times[created],
                    "label": label,
                    "source": source,
                    "message_count": count,
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                    "cost_usd": cost,
                    "agent_name": agent,
                    "current_slot_id": slot,
                    "last_summary_turn": summary,
                    "memory_version": memory,
                    "slots": slots,
                    "spend": spend,
                    "pending": None,
                },
                ckpt_fields.copy(),
            )
        else:
            record = _validated(dict(zip(COLUMNS, row, strict=True)), states)
        records.append(record)
    return records


def latest_checkpoint_id(conn: sqlite3.Connection, session_id: str) -> str | None:
    """The id of ``session_id``'s newest checkpoint, or ``None``: the first entry of the
    listing's index, no record read."""
    found = conn.execute(
        "SELECT ckpt_id FROM checkpoints WHERE session_id = ? ORDER BY ckpt_id DESC LIMIT 1",
        (session_id,),
    ).fetchone()
    return None if found is None else str(found[0])

"""Reading checkpoint rows back into records, fast: rows the store wrote are not validated again.

Every ``checkpoints`` row was written from a validated :class:`~agcore_lab.store.base.CkptMeta`
(``insert_checkpoint`` takes nothing else), so a read only checks that each column still has
the type it was written with (one set lookup of the row's column types) and builds the
records directly (:func:`~agcore_lab.store._checkpoint_plans.built`, the few assignments
pydantic's own constructor makes). The JSON columns are parsed and checked once per run of
neighbouring rows that repeat a text (:mod:`~agcore_lab.store._checkpoint_plans`); each
record still gets slot and spend records of its own. A row that fails a check (edited by
hand, damaged on disk) goes through full validation instead, which names what is wrong in a
:class:`~agcore_lab.errors.CorruptRecordError` — when it is read, never later.
"""

from __future__ import annotations

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
    state_fields,
)
from agcore_lab.store._gc_pause import paused_collector
from agcore_lab.store._sqlite_checkpoints import checkpoint_base as lean_checkpoint_base
from agcore_lab.store._sqlite_checkpoints import latest_checkpoint_id as lean_latest_checkpoint_id
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


class _Plans:
    """What one read parsed and checked, for the row at hand: each text is parsed once for a
    run of rows that repeat it (checkpoints without a turn between them are neighbours in
    the listing); a row with texts of its own costs what building it straight would (no
    cache to fill, nothing kept beyond the previous row)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self.read_at = utcnow()
        self.states: dict[str, dict[str, Any]] = {}  # as stored, for the validated path
        self._checked: dict[str, dict[str, Any]] = {}  # of those, the ones that pass
        self._fields: dict[str, set[str]] = {}  # and the fields set each gives
        self._slots: tuple[Any, Any, SlotPlan | None] = (None, None, None)
        self._spend: tuple[Any, SpendPlan | None] = (None, None)
        self._time: tuple[Any, datetime | None] = (None, None)

    def heads(self, row: tuple[Any, ...]) -> dict[str, Any]:
        """A row's parsed ``slots_json``, its slot states read (raises CorruptRecordError)."""
        heads = _heads(row[15], row)
        states = self.states
        missing = {
            pair[1]
            for pair in heads.values()
            if type(pair) is list and len(pair) == 2 and type(pair[1]) is str
            and pair[1] not in states
        }  # fmt: skip
        if missing:
            for digest, state in _states(self._conn, missing).items():
                states[digest] = state
                try:
                    self._checked[digest] = checked_state(state)
                    self._fields[digest] = state_fields(state)
                except Unchecked:
                    pass  # its checkpoints take the validated path, which names the problem
        return heads

    def slot_plan(self, row: tuple[Any, ...]) -> tuple[SlotPlan | None, bool]:
        """The plan of a row's slots, and whether it is new (its values not handed out yet)."""
        text, sid, plan = self._slots
        if row[15] == text and row[0] == sid and text is not None:
            return plan, False
        sid = row[0]
        heads = self.heads(row)
        plan = (
            slot_plan(heads, sid, self._checked, self.read_at, self._fields)
            if type(sid) is str
            else None
        )
        self._slots = (row[15], sid, plan)
        return plan, True

    def spend_plan(self, text: object) -> SpendPlan | None:
        """The plan of a ``spend_json`` text."""
        last, plan = self._spend
        if text != last or last is None:
            plan = spend_plan(text)
            self._spend = (text, plan)
        return plan

    def time(self, text: object) -> datetime | None:
        """A ``created_at`` text as a time (``None``: not as written)."""
        last, when = self._time
        if text != last or last is None:
            try:
                when = stamp(text)
            except Unchecked:
                when = None
            self._time = (text, when)
        return when


def read_checkpoints(
    conn: sqlite3.Connection,
    where: str,
    params: Sequence[Any],
    limit: int | None = None,
    *,
    rows: list[tuple[Any, ...]] | None = None,
) -> list[CkptMeta]:
    """Checkpoints matching ``where`` (an SQL condition), newest first, at most ``limit``.

    ``rows``: the rows (in :data:`COLUMNS`, newest first) read already — SQLite's schema 11
    reads its lean rows itself (``_sqlite_checkpoints.old_rows``); ``where`` is not used then.

    Raises:
        CorruptRecordError: A row (or a slot state it names) is damaged: nothing is returned.
    """
    if rows is None:
        sql = f"SELECT {_SELECT} FROM checkpoints WHERE {where} ORDER BY ckpt_id DESC"
        cursor = conn.execute(
            sql if limit is None else sql + " LIMIT ?",
            tuple(params) if limit is None else (*params, limit),
        )
        rows = cursor.fetchall()
        if rows and type(rows[0]) is not tuple:
            rows = [tuple(r) for r in rows]  # another backend's row objects
    # Tens of thousands of small objects, none of them garbage: the cyclic collector would
    # rescan them over and over while they are made (see _gc_pause).
    with paused_collector():
        return _records(conn, rows)


def _records(conn: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> list[CkptMeta]:
    plans = _Plans(conn)
    slot_plan_of, spend_plan_of, time_of = plans.slot_plan, plans.spend_plan, plans.time
    written, sources = _WRITTEN_TYPES, _SOURCES
    ckpt_fields, spend_fields = _CKPT_FIELDS, _SPEND_FIELDS
    records = []
    for row in rows:
        record = None
        if tuple(map(type, row)) in written and row[6] in sources:
            slots_of, fresh = slot_plan_of(row)
            spend_of = spend_plan_of(row[16])
            when = time_of(row[4])
            if slots_of is not None and spend_of is not None and when is not None:
                slots = {}
                for slot_id, values, pinned, fields in slots_of:
                    # The first record of a plan takes its values (no user code runs before
                    # the read returns); the next ones copy them and get lists of their own.
                    own = values if fresh else values.copy()
                    own["pinned_ids"] = list(pinned)
                    slots[slot_id] = built(SlotRecord, own, fields.copy())
                spend = {
                    model: built(ModelSpend, {"usage": usage, "cost": spent}, spend_fields.copy())
                    for model, usage, spent in spend_of
                }
                record = built(
                    CkptMeta,
                    {
                        "ckpt_id": row[1],
                        "session_id": row[0],
                        "parent_ckpt_id": row[2],
                        "turn_index": row[3],
                        "created_at": when,
                        "label": row[5],
                        "source": row[6],
                        "message_count": row[7],
                        "prompt_tokens": row[8],
                        "completion_tokens": row[9],
                        "cost_usd": row[10],
                        "agent_name": row[11],
                        "current_slot_id": row[12],
                        "last_summary_turn": row[13],
                        "memory_version": row[14],
                        "slots": slots,
                        "spend": spend,
                        "pending": None,
                    },
                    ckpt_fields.copy(),
                )
        if record is None:
            plans.heads(row)  # the slot states it names, for the validated read
            record = _validated(dict(zip(COLUMNS, row, strict=True)), plans.states)
        records.append(record)
    return records


def latest_checkpoint_id(conn: sqlite3.Connection, session_id: str) -> str | None:
    """The id of ``session_id``'s newest checkpoint, or ``None``: the first entry of the
    listing's index, no record read (on SQLite, of the lean rows' index: the ``checkpoints``
    view would read the whole session)."""
    if getattr(conn, "dialect", "sqlite") != "postgresql":
        return lean_latest_checkpoint_id(conn, session_id)
    found = conn.execute(
        "SELECT ckpt_id FROM checkpoints WHERE session_id = ? ORDER BY ckpt_id DESC LIMIT 1",
        (session_id,),
    ).fetchone()
    return None if found is None else str(found[0])


def checkpoint_base(conn: sqlite3.Connection, session_id: str) -> tuple[str | None, int]:
    """A session's latest checkpoint id (or ``None``) and its memory version: what its next
    checkpoint builds on (on SQLite in one statement)."""
    if getattr(conn, "dialect", "sqlite") != "postgresql":
        return lean_checkpoint_base(conn, session_id)
    row = conn.execute(
        "SELECT coalesce(max(version), 0) FROM memory_log WHERE session_id = ?", (session_id,)
    ).fetchone()
    return latest_checkpoint_id(conn, session_id), int(row[0])

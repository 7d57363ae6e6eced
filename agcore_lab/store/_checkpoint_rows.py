"""Reading checkpoint rows back into records, fast: rows the store wrote are not validated again.

Every ``checkpoints`` row was written from a validated :class:`~agcore_lab.store.base.CkptMeta`
(``insert_checkpoint`` takes nothing else), so a read parses its JSON columns with
pydantic-core's parser and only checks that each column still has
the type it was written with — one ``type(...) is`` test per column — and builds the records
directly (:func:`built`, the few assignments pydantic's own constructor makes). A row that
fails a check (edited by hand, damaged on disk) goes through full validation instead, which
names what is wrong in a :class:`~agcore_lab.errors.CorruptRecordError`. Listing 10,000
checkpoints costs a few times the SQL under it, not a pydantic validation per row.
"""

from __future__ import annotations

import gc
import json
import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import from_json

from agcore_lab.errors import CorruptRecordError
from agcore_lab.ids import utcnow
from agcore_lab.llm.usage import ModelSpend, Usage
from agcore_lab.store.base import CkptMeta, SlotMode, SlotRecord
from agcore_lab.store.pending import state_from_json

__all__ = ["COLUMNS", "built", "read_checkpoints"]

M = TypeVar("M", bound=BaseModel)

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
_MODES = frozenset({"full", "focused"})
_STRATEGIES = frozenset({None, "append", "replace", "summarize"})
_OPTIONAL_TEXT = (str, type(None))
_OPTIONAL_INT = (int, type(None))


class _Unchecked(Exception):
    """A stored value is not of the type it was written with: validate the row fully."""


def built(cls: type[M], values: dict[str, Any], fields: set[str] | None = None) -> M:
    """A ``cls`` holding ``values`` (every field, already of its type), without validation.

    What ``model_construct`` does for a model without private attributes, extras or
    post-init hooks, minus its per-field default lookups (it is slower than validating).
    ``fields``: the names of ``values`` when the caller has them as a set already (shared by
    the instances of a frozen model: nothing changes it in place, ``model_copy`` copies it).
    """
    record = cls.__new__(cls)
    object.__setattr__(record, "__dict__", values)
    if fields is None:
        fields = set(values)
    elif not cls.model_config.get("frozen"):
        fields = fields.copy()  # assignment adds to it; a frozen model's set is only copied
    object.__setattr__(record, "__pydantic_fields_set__", fields)
    object.__setattr__(record, "__pydantic_extra__", None)
    object.__setattr__(record, "__pydantic_private__", None)
    return record


def _when(text: object) -> datetime:
    if type(text) is not str:
        raise _Unchecked
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise _Unchecked from None
    if moment.tzinfo is None:
        raise _Unchecked  # the fully validated path decides what a naive time means
    return moment


def _slot_state(state: object) -> dict[str, Any]:
    # A stored slot state, checked field by field; the dict handed to SlotRecord.
    if type(state) is not dict:
        raise _Unchecked
    get = state.get
    pinned = get("pinned_ids", [])
    checks = (
        type(get("fork_point", 0)) is int,
        type(get("merge_base", 0)) is int,
        type(get("recent_window", 20)) is int,
        get("mode", "full") in _MODES,
        get("merge_strategy") in _STRATEGIES,
        isinstance(get("parent_slot_id"), _OPTIONAL_TEXT),
        isinstance(get("summary_override"), _OPTIONAL_TEXT),
        type(pinned) is list and all(type(p) is str for p in pinned),
        "created_at" in state,
        len(state.keys() - _STATE_KEYS) == 0,
    )
    if not all(checks):
        raise _Unchecked
    return {
        "session_id": None,
        "slot_id": None,
        "parent_slot_id": get("parent_slot_id"),
        "fork_point": get("fork_point", 0),
        "merge_base": get("merge_base", 0),
        "mode": SlotMode(get("mode", "full")),
        "head_node_id": None,
        "summary_override": get("summary_override"),
        "pinned_ids": pinned,
        "recent_window": get("recent_window", 20),
        "created_at": _when(state["created_at"]),
        "updated_at": None,
        "merge_strategy": get("merge_strategy"),
    }


_SLOT_FIELDS = set(SlotRecord.model_fields)
_CKPT_FIELDS = set(CkptMeta.model_fields)
_USAGE_FIELDS = {"prompt_tokens", "completion_tokens", "requests"}
_SPEND_FIELDS = {"usage", "cost"}
_STATE_KEYS = frozenset(
    {
        "parent_slot_id",
        "fork_point",
        "merge_base",
        "mode",
        "summary_override",
        "pinned_ids",
        "recent_window",
        "created_at",
        "merge_strategy",
    }
)


def _heads(row: Sequence[Any]) -> dict[str, Any]:
    """The row's ``slots_json``: slot id -> [head node, state digest]."""
    try:
        heads = from_json(row[15])
        if type(heads) is not dict:
            raise TypeError(f"an object was expected, not {type(heads).__name__}")
        return heads
    except (ValueError, TypeError) as exc:
        raise _corrupt(dict(zip(COLUMNS, row, strict=True)), "invalid slots JSON", exc) from exc


def _slots(
    heads: dict[str, Any], session_id: str, states: dict[str, dict[str, Any]], updated: datetime
) -> dict[str, SlotRecord]:
    slots = {}
    for slot_id, pair in heads.items():
        if type(pair) is not list or len(pair) != 2:
            raise _Unchecked
        head, digest = pair
        state = states.get(digest) if type(digest) is str else None
        if state is None or not isinstance(head, _OPTIONAL_TEXT):
            raise _Unchecked
        values = state.copy()
        values["session_id"] = session_id
        values["slot_id"] = slot_id
        values["head_node_id"] = head
        values["pinned_ids"] = list(state["pinned_ids"])
        # Not stored in a checkpoint: the time it is read, as a validated read gives.
        values["updated_at"] = updated
        slots[slot_id] = built(SlotRecord, values, _SLOT_FIELDS)
    return slots


def _spend(text: object) -> dict[str, ModelSpend]:
    if type(text) is not str:
        raise _Unchecked
    try:
        stored = from_json(text)
    except ValueError:
        raise _Unchecked from None
    if type(stored) is not dict:
        raise _Unchecked
    spend = {}
    for model, figures in stored.items():
        if type(figures) is not list or len(figures) != 4:
            raise _Unchecked
        prompt, completion, requests, cost = figures
        if not (
            type(prompt) is int
            and type(completion) is int
            and type(requests) is int
            and min(prompt, completion, requests) >= 0
            and type(cost) in (int, float)
        ):
            raise _Unchecked
        usage = built(
            Usage,
            {"prompt_tokens": prompt, "completion_tokens": completion, "requests": requests},
            _USAGE_FIELDS,
        )
        spend[model] = built(ModelSpend, {"usage": usage, "cost": float(cost)}, _SPEND_FIELDS)
    return spend


def _fast(
    row: Sequence[Any],
    heads: dict[str, Any],
    states: dict[str, dict[str, Any]],
    updated: datetime,
) -> CkptMeta | None:
    """The record of a row whose every column has its written type; ``None`` otherwise."""
    (
        session_id,
        ckpt_id,
        parent,
        turn,
        created,
        label,
        source,
        count,
        prompt,
        completion,
        cost,
        agent,
        slot,
        summary_turn,
        memory,
        _slots_json,
        spend_text,
        pending_text,
    ) = row
    if pending_text is not None:
        return None  # rare; its state is parsed strictly by the validated path
    ints = (turn, count, prompt, completion, memory)
    if not (
        all(type(n) is int for n in ints)
        and type(session_id) is str
        and type(ckpt_id) is str
        and type(agent) is str
        and type(slot) is str
        and source in _SOURCES
        and type(cost) is float
        and isinstance(parent, _OPTIONAL_TEXT)
        and isinstance(label, _OPTIONAL_TEXT)
        and isinstance(summary_turn, _OPTIONAL_INT)
        and type(summary_turn) is not bool
    ):
        return None
    try:
        values = {
            "ckpt_id": ckpt_id,
            "session_id": session_id,
            "parent_ckpt_id": parent,
            "turn_index": turn,
            "created_at": _when(created),
            "label": label,
            "source": source,
            "message_count": count,
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "cost_usd": cost,
            "agent_name": agent,
            "current_slot_id": slot,
            "last_summary_turn": summary_turn,
            "memory_version": memory,
            "slots": _slots(heads, session_id, states, updated),
            "spend": _spend(spend_text),
            "pending": None,
        }
    except _Unchecked:
        return None
    return built(CkptMeta, values, _CKPT_FIELDS)


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
    """
    if rows is None:
        sql = f"SELECT {_SELECT} FROM checkpoints WHERE {where} ORDER BY ckpt_id DESC"
        cursor = conn.execute(
            sql if limit is None else sql + " LIMIT ?",
            tuple(params) if limit is None else (*params, limit),
        )
        rows = [tuple(r) for r in cursor.fetchall()]
    heads = [_heads(row) for row in rows]
    digests = {
        pair[1]
        for slots in heads
        for pair in slots.values()
        if type(pair) is list and len(pair) == 2 and type(pair[1]) is str
    }
    states = _states(conn, digests)
    checked = {}
    for digest, state in states.items():
        try:
            checked[digest] = _slot_state(state)
        except _Unchecked:
            pass  # its checkpoints take the validated path, which names the problem
    updated = utcnow()
    records = []
    # Tens of thousands of small objects, none of them garbage: the cyclic collector would
    # rescan them over and over while they are made (it doubled the time of a long listing).
    collecting = gc.isenabled()
    gc.disable()
    try:
        for row, slots in zip(rows, heads, strict=True):
            record = _fast(row, slots, checked, updated)
            if record is None:
                record = _validated(dict(zip(COLUMNS, row, strict=True)), states)
            records.append(record)
    finally:
        if collecting:
            gc.enable()
    return records

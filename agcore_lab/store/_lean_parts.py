"""The slot and spend records of a listing's lean rows (``_lean_listing``), made once per
distinct stored value where they cannot be changed, and per row where they can.

Each slot state (``slot_states``), ``slots_json`` text and ``spend_json`` text a listing
meets is parsed and checked once; a :class:`~agcore_lab.llm.usage.Usage` (frozen) may serve
neighbouring rows. Every :class:`~agcore_lab.store.base.SlotRecord` and
:class:`~agcore_lab.llm.usage.ModelSpend`, with its dict, fields set and pinned-id list, is
its record's own. ``None`` from any method: the row is not as a write leaves it — it is read
the validated way, which names the problem.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from pydantic_core import from_json

from agcore_lab.ids import utcnow
from agcore_lab.llm.usage import ModelSpend, Usage
from agcore_lab.store._checkpoint_plans import (
    Unchecked,
    built,
    checked_state,
    spend_plan,
    state_fields,
)
from agcore_lab.store.base import SlotRecord

__all__ = ["Parts", "StatePlan"]

_SPEND_FIELDS = set(ModelSpend.model_fields)
_USAGE_FIELDS = set(Usage.model_fields)
# A slot state's SlotRecord values (ids and head to fill in), its pinned ids and the fields
# set a validated read gives (the stored keys and the ids: not updated_at).
StatePlan = tuple[dict[str, Any], tuple[str, ...], set[str]]


class Parts:
    """The slot and spend records of one listing's rows. Each slot state (``slot_states``),
    slots text and spend text is parsed and checked once; a usage is shared by neighbouring
    rows with the same figures (frozen); every record, dict, list and fields set a user can
    change is each row's own. ``None``: the row is not as written — it goes the other way,
    whose validation names the problem."""

    def __init__(self, conn: sqlite3.Connection, names: dict[int, str]) -> None:
        self._conn = conn
        self._names = names
        self._read_at = utcnow()  # a slot's updated_at, as a validated read gives
        self._states: dict[str, StatePlan | None] = {}
        self._texts: dict[str, tuple[tuple[str, Any, str], ...] | None] = {}
        self.flat_states: dict[int, StatePlan | None] = {}
        self._spend_text: tuple[Any, Any] = (None, None)

    def _state(self, digest: object) -> StatePlan | None:
        if type(digest) is not str:
            return None
        if digest in self._states:
            return self._states[digest]
        plan = None
        stored = self._conn.execute(
            "SELECT state_json FROM slot_states WHERE state_hash = ?", (digest,)
        ).fetchone()
        if stored is not None:
            try:
                state = json.loads(stored[0])
                values = checked_state(state)
            except (Unchecked, ValueError, TypeError):
                values = None
            if values is not None:
                values["updated_at"] = self._read_at
                plan = (values, values["pinned_ids"], state_fields(state))
        self._states[digest] = plan
        return plan

    def _slot(self, digest: object, session_id: str, slot_id: str, head: Any) -> Any:
        plan = self._state(digest)
        if plan is None:
            return None
        template, pinned, fields = plan
        values = template.copy()
        values["session_id"] = session_id
        values["slot_id"] = slot_id
        values["head_node_id"] = head
        values["pinned_ids"] = list(pinned)
        return built(SlotRecord, values, fields.copy())

    def flat_state(self, state: int) -> StatePlan | None:
        """The plan of a flat slot's state (a name number), kept in :attr:`flat_states`."""
        plan = self._state(self._names.get(state))
        self.flat_states[state] = plan
        return plan

    def text_slots(self, text: object, session_id: str) -> dict[str, SlotRecord] | None:
        """The slots of a row's ``slots_json`` (slot id -> [head node, state digest])."""
        if type(text) is not str:
            return None
        if text not in self._texts:
            self._texts[text] = _heads(text)
        heads = self._texts[text]
        if heads is None:
            return None
        slots = {}
        for slot_id, head, digest in heads:
            slot = self._slot(digest, session_id, slot_id, head)
            if slot is None:
                return None
            slots[slot_id] = slot
        return slots

    def usage(self, figures: tuple[Any, Any, Any]) -> Usage | None:
        """The usage of flat (prompt, completion, requests) figures, or ``None``."""
        if type(figures[2]) is not int or min(figures) < 0:
            return None
        prompt, completion, requests = figures
        return built(
            Usage,
            {"prompt_tokens": prompt, "completion_tokens": completion, "requests": requests},
            _USAGE_FIELDS.copy(),
        )

    def text_spend(self, text: object) -> dict[str, ModelSpend] | None:
        """The models of a row's ``spend_json`` (model -> [prompt, completion, requests,
        cost])."""
        last, plan = self._spend_text
        if text != last or last is None:
            plan = spend_plan(text)
            self._spend_text = (text, plan)
        if plan is None:
            return None
        return {
            model: built(ModelSpend, {"usage": usage, "cost": cost}, _SPEND_FIELDS.copy())
            for model, usage, cost in plan
        }


def _heads(text: str) -> tuple[tuple[str, Any, str], ...] | None:
    """A ``slots_json`` text as (slot id, head, digest) triples, or ``None`` if not as
    written."""
    try:
        heads = from_json(text)
    except ValueError:
        return None
    if type(heads) is not dict:
        return None
    triples = []
    for slot_id, pair in heads.items():
        if type(pair) is not list or len(pair) != 2:
            return None
        head, digest = pair
        if type(digest) is not str or not (head is None or type(head) is str):
            return None
        triples.append((slot_id, head, digest))
    return tuple(triples)

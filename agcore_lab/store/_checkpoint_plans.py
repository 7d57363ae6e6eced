"""The checked, parsed form of a checkpoint row's JSON columns, made once per run of rows.

Neighbouring rows of a listing may repeat their ``slots_json`` / ``spend_json`` (checkpoints
taken without a turn between them, copies), so a text is parsed and checked once for the run
of rows that repeat it, into a *plan*: everything needed to build the row's
:class:`~agcore_lab.store.base.SlotRecord` and :class:`~agcore_lab.llm.usage.ModelSpend`
records. Plans are private to one read and never handed out: every record gets slot and
spend records (and lists, dicts, fields sets) of its own, since those are mutable; only
immutable values (strings, numbers, datetimes, frozen :class:`~agcore_lab.llm.usage.Usage`)
are shared between records.

When nothing repeats (a turn per checkpoint changes a slot head and the token counts), a
plan costs what building the records straight from the JSON would: its first record takes
the plan's values as they are. A text that fails
a check has no plan (``None``): its rows take the fully validated path, which names what is
wrong.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, TypeVar

from pydantic import BaseModel
from pydantic_core import from_json

from agcore_lab.llm.usage import Usage
from agcore_lab.store._trusted import SET_DICT, SET_EXTRA, SET_FIELDS, SET_PRIVATE
from agcore_lab.store.base import SlotMode

__all__ = [
    "SlotPlan",
    "SpendPlan",
    "built",
    "checked_state",
    "slot_plan",
    "spend_plan",
    "stamp",
    "state_fields",
]

M = TypeVar("M", bound=BaseModel)

# The four slots of a pydantic model instance, set through their own descriptors.
_set_dict, _set_fields, _set_extra, _set_private = SET_DICT, SET_FIELDS, SET_EXTRA, SET_PRIVATE
_new = object.__new__

_MODES = {"full": SlotMode.Full, "focused": SlotMode.Focused}
_STRATEGIES = frozenset({None, "append", "replace", "summarize"})
_OPTIONAL_TEXT = (str, type(None))
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
_USAGE_FIELDS = frozenset({"prompt_tokens", "completion_tokens", "requests"})

# One slot of a plan: (slot id, the SlotRecord's values, pinned ids, its fields set).
SlotPlan = tuple[tuple[str, dict[str, Any], tuple[str, ...], set[str]], ...]
# One model of a plan: (model name, its usage, its cost).
SpendPlan = tuple[tuple[str, Usage, float], ...]


class Unchecked(Exception):
    """A stored value is not of the type it was written with: validate the row fully."""


def built(cls: type[M], values: dict[str, Any], fields: set[str] | None = None) -> M:
    """A ``cls`` holding ``values`` (every field, already of its type), without validation.

    What ``model_construct`` does for a model without private attributes, extras or
    post-init hooks, minus its per-field default lookups (it is slower than validating).
    ``fields``: the set of ``values``' names, owned by the new record (assignment adds to it);
    by default a new set of them.
    """
    record = _new(cls)
    _set_dict(record, values)
    _set_fields(record, set(values) if fields is None else fields)
    _set_extra(record, None)
    _set_private(record, None)
    return record


def stamp(text: object) -> datetime:
    """A stored ISO time with its offset; :class:`Unchecked` for anything else."""
    if type(text) is not str:
        raise Unchecked
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise Unchecked from None
    if moment.tzinfo is None:
        raise Unchecked  # the fully validated path decides what a naive time means
    return moment


def checked_state(state: object) -> dict[str, Any]:
    """A stored slot state (``slot_states.state_json``), checked field by field: the
    :class:`SlotRecord` values it gives (no ids, no head, no ``updated_at`` yet)."""
    if type(state) is not dict:
        raise Unchecked
    get = state.get
    pinned = get("pinned_ids", [])
    mode = get("mode", "full")
    checks = (
        type(get("fork_point", 0)) is int,
        type(get("merge_base", 0)) is int,
        type(get("recent_window", 20)) is int,
        type(mode) is str and mode in _MODES,
        get("merge_strategy") in _STRATEGIES,
        isinstance(get("parent_slot_id"), _OPTIONAL_TEXT),
        isinstance(get("summary_override"), _OPTIONAL_TEXT),
        type(pinned) is list and all(type(p) is str for p in pinned),
        "created_at" in state,
        len(state.keys() - _STATE_KEYS) == 0,
    )
    if not all(checks):
        raise Unchecked
    return {
        "session_id": None,
        "slot_id": None,
        "parent_slot_id": get("parent_slot_id"),
        "fork_point": get("fork_point", 0),
        "merge_base": get("merge_base", 0),
        "mode": _MODES[mode],
        "head_node_id": None,
        "summary_override": get("summary_override"),
        "pinned_ids": tuple(pinned),
        "recent_window": get("recent_window", 20),
        "created_at": stamp(state["created_at"]),
        "updated_at": None,
        "merge_strategy": get("merge_strategy"),
    }


def state_fields(state: dict[str, Any]) -> set[str]:
    """The fields set of a :class:`SlotRecord` validated from a stored slot state (a checked
    one) with its ids and head: what a validated read sets (``updated_at`` is not stored)."""
    return {"session_id", "slot_id", "head_node_id", *state}


def slot_plan(
    heads: dict[str, Any],
    session_id: str,
    states: dict[str, dict[str, Any]],
    read_at: datetime,
    fields: dict[str, set[str]],
) -> SlotPlan | None:
    """The plan of one parsed ``slots_json`` (slot id -> [head node, state digest]) of
    ``session_id``, or ``None`` when a head or state is not as written. ``fields``: each
    state's :func:`state_fields`."""
    plan = []
    for slot_id, pair in heads.items():
        if type(pair) is not list or len(pair) != 2:
            return None
        head, digest = pair
        state = states.get(digest) if type(digest) is str else None
        if state is None or not isinstance(head, _OPTIONAL_TEXT):
            return None
        values = state.copy()
        pinned = values["pinned_ids"]  # replaced by a list of its own per record, in place
        values["session_id"] = session_id
        values["slot_id"] = slot_id
        values["head_node_id"] = head
        # Not stored in a checkpoint: the time it is read, as a validated read gives.
        values["updated_at"] = read_at
        plan.append((slot_id, values, pinned, fields[digest]))
    return tuple(plan)


def spend_plan(text: object) -> SpendPlan | None:
    """The plan of one ``spend_json`` (model -> [prompt, completion, requests, cost]), or
    ``None`` when it is not as written."""
    if type(text) is not str:
        return None
    try:
        stored = from_json(text)
    except ValueError:
        return None
    if type(stored) is not dict:
        return None
    plan = []
    for model, figures in stored.items():
        if type(figures) is not list or len(figures) != 4:
            return None
        prompt, completion, requests, cost = figures
        if not (
            type(prompt) is int
            and type(completion) is int
            and type(requests) is int
            and min(prompt, completion, requests) >= 0
            and type(cost) in (int, float)
        ):
            return None
        # Frozen: one Usage may serve every record of this text.
        usage = built(
            Usage,
            {"prompt_tokens": prompt, "completion_tokens": completion, "requests": requests},
            set(_USAGE_FIELDS),
        )
        plan.append((model, usage, float(cost)))
    return tuple(plan)

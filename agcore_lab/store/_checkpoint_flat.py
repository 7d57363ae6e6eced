"""Whether a checkpoint's slots and spend are *flat* (schema 11, SQLite): one slot, the
current one, and one model whose totals are the checkpoint's, which the lean row keeps in
flat columns (its ``slots_json`` / ``spend_json`` then stay empty) because the ``checkpoints``
view writes their JSON back byte for byte.

:func:`flat_slot` / :func:`flat_spend` decide it from the JSON texts of a row in the old
columns (migrations, ``agcore-lab migrate``); :func:`flat_slot_of` / :func:`flat_spend_of`
give the same answer from the values those texts would be written from, without writing or
parsing them (a turn's checkpoint).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic_core import from_json

from agcore_lab.store._node_keys import LINK, MESSAGE, split_id

__all__ = ["flat_slot", "flat_slot_of", "flat_spend", "flat_spend_of"]

_SAFE = re.compile(r"[A-Za-z0-9_.:/@+\- ]{1,200}")
_DIGEST = re.compile(r"[0-9a-f]{16}")


def _cost_text(cost: float) -> str | None:
    # How SQLite's JSON writes a REAL (%!.15g), when that is also Python's repr.
    text = repr(cost)
    if "e" in text or "n" in text:
        return None
    return text if f"{cost:.15g}" == text.removesuffix(".0") or f"{cost:.15g}" == text else None


def flat_slot(text: object, slot: object) -> tuple[int | None, int | None, str] | None:
    """(head offset source, head tail, digest) of a one-slot ``slots_json`` the view writes
    back byte for byte; ``None`` otherwise. The head offset source is the head's key."""
    if type(text) is not str or type(slot) is not str or _SAFE.fullmatch(slot) is None:
        return None
    try:
        heads = from_json(text)
    except ValueError:
        return None
    if type(heads) is not dict or list(heads) != [slot]:
        return None
    pair = heads[slot]
    if type(pair) is not list or len(pair) != 2 or type(pair[1]) is not str:
        return None
    head, digest = pair
    if _DIGEST.fullmatch(digest) is None:
        return None
    if head is None:
        if text != f'{{"{slot}":[null,"{digest}"]}}':
            return None
        return None, None, digest
    if type(head) is not str or text != f'{{"{slot}":["{head}","{digest}"]}}':
        return None
    return _head_key(head, digest)


def flat_spend(text: object, prompt: object, completion: object, cost: object) -> Any:
    """(model, requests) of a one-model ``spend_json`` whose totals are the row's, which
    the view writes back byte for byte; ``None`` otherwise."""
    if type(text) is not str or type(cost) is not float:
        return None
    try:
        spend = from_json(text)
    except ValueError:
        return None
    if type(spend) is not dict or len(spend) != 1:
        return None
    ((model, figures),) = spend.items()
    if _SAFE.fullmatch(model) is None or type(figures) is not list or len(figures) != 4:
        return None
    p, c, requests, spent = figures
    shown = _cost_text(cost)
    if not (
        type(p) is int
        and type(c) is int
        and type(requests) is int
        and type(spent) is float
        and (p, c, spent) == (prompt, completion, cost)
        and shown is not None
        and text == f'{{"{model}":[{p},{c},{requests},{shown}]}}'
    ):
        return None
    return model, requests


def flat_slot_of(
    heads: dict[str, list[Any]], slot: object
) -> tuple[int | None, int | None, str] | None:
    """:func:`flat_slot` of the ``slots_json`` that ``compact(heads)`` would give (``heads``:
    ``{slot_id: [head node id, state digest]}``), without writing or parsing the text: the
    same answer, since the text it checks is then exactly the compact JSON of ``heads``."""
    if len(heads) != 1 or type(slot) is not str or _SAFE.fullmatch(slot) is None:
        return None
    pair = heads.get(slot)
    if pair is None or len(pair) != 2:
        return None
    head, digest = pair
    if type(digest) is not str or _DIGEST.fullmatch(digest) is None:
        return None
    if head is None:
        return None, None, digest
    return _head_key(head, digest)  # ids of our digits only: their JSON is the id itself


def flat_spend_of(
    spend: Mapping[str, tuple[object, object, object, object]],
    prompt: object,
    completion: object,
    cost: object,
) -> tuple[str, int] | None:
    """:func:`flat_spend` of the ``spend_json`` that the compact JSON of ``spend`` (``{model:
    (prompt, completion, requests, cost)}``) would give, without writing or parsing it."""
    if len(spend) != 1 or type(cost) is not float:
        return None
    ((model, (p, c, requests, spent)),) = spend.items()
    if type(model) is not str or _SAFE.fullmatch(model) is None:
        return None
    if not (type(p) is int and type(c) is int and type(requests) is int):
        return None
    if type(spent) is not float or (p, c, spent) != (prompt, completion, cost):
        return None
    shown = _cost_text(cost)  # the text's cost (repr) is the one the view writes back
    return (model, requests) if shown is not None and repr(spent) == shown else None


def _head_key(head: str, digest: Any) -> tuple[int, int, Any] | None:
    # A flat slot's head as its node key and tail (a link's tail marked by bit 20), with its
    # state's digest; None when the head is not an id of our digits.
    found = split_id(head, MESSAGE)
    link = 0
    if found is None:
        found, link = split_id(head, LINK), 1
    if found is None:
        return None
    return found[0], found[1] | link << 20, digest

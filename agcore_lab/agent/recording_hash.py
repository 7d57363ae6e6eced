"""The request hash of a request as it is sent, computed incrementally along a slot's history.

A turn does not need it (the store derives each call's hash when it is read); the recorder
computes it at send time only when a redactor or a listener gets the call's record at once.
Each request then hashes only what it adds to the history since the slot's last request (or
since an earlier prefix, after a rollback): see :func:`agcore_lab.llm.call_record.fold`.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import JsonValue

from agcore_lab.agent.slots import ContextSlot
from agcore_lab.llm.base import ToolSpec
from agcore_lab.llm.call_record import Fold, finish_hash, fold, join_folds
from agcore_lab.llm.messages import Message

__all__ = ["sent_request_hash"]


# The fold (see :func:`agcore_lab.llm.call_record.fold`) of a slot's history at a chain node,
# so each request hashes only what it adds: node id -> (fold, length, last message).
_FOLDS: dict[str, tuple[Fold, int, Message]] = {}
_LAST_HEAD: dict[tuple[str, str], str] = {}
_FOLDS_MAX = 20_000


def _history_fold(session_id: str, slot: ContextSlot) -> Fold:
    history, head = slot.messages, slot.head_node_id
    count = len(history)
    entry = _FOLDS.get(head) if head is not None else None
    if entry is not None and entry[1] == count and count and entry[2] is history[-1]:
        return entry[0]
    last = _LAST_HEAD.get((session_id, slot.slot_id))
    before = _FOLDS.get(last) if last is not None else None
    if not (before is not None and 0 < before[1] <= count and history[before[1] - 1] is before[2]):
        before = _earlier_fold(slot)  # e.g. after a rollback: the history is a shorter prefix
    if before is not None:
        value = fold(history[before[1] :], before[0])  # the history grew since: add the rest
    else:
        value = fold(history)
    if head is not None and count:
        if len(_FOLDS) >= _FOLDS_MAX:
            _FOLDS.clear()
            _LAST_HEAD.clear()
        _FOLDS[head] = (value, count, history[-1])
        _LAST_HEAD[(session_id, slot.slot_id)] = head
    return value


def _earlier_fold(slot: ContextSlot, look_back: int = 8) -> tuple[Fold, int, Message] | None:
    """The fold of one of the last ``look_back`` prefixes of ``slot``'s history, if one is
    known (a request was made at that node): after a rollback the history is a prefix of what
    was folded before, and a turn's earlier request ended a message or two before its end."""
    history, nodes = slot.messages, slot.chain_nodes or {}
    for index in range(len(history) - 1, max(len(history) - 1 - look_back, -1), -1):
        message = history[index]
        entry = _FOLDS.get(nodes.get(index) or message.id)
        if entry is not None and entry[1] == index + 1 and entry[2].id == message.id:
            return entry  # (a message id names one immutable message, also when re-read)
    return None


def sent_request_hash(
    session_id: str,
    context: Sequence[Message],
    tail: int,
    slot: ContextSlot | None,
    tools: Sequence[ToolSpec],
    model: str,
    params: dict[str, JsonValue],
) -> str:
    """:func:`~agcore_lab.llm.call_record.request_hash`, without re-reading the history."""
    head = len(context) - tail
    if slot is not None and tail and tail == len(slot.messages):
        tail_fold = _history_fold(session_id, slot)
    else:
        tail_fold = fold(context[head:])
    folded = join_folds(fold(context[:head]), tail_fold) if head else tail_fold
    return finish_hash(folded, len(context), tools, model, params)

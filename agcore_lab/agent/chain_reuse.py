"""Slots rebuilt from stored records, reusing the messages a live session holds already.

Stored chains never change (a node's ancestors are fixed), so when a live slot's chain
passes through the node a stored slot ends at, the messages up to that node *are* that
slot's history: a rollback to an ancestor of the head, a fork from one, or a refresh after
another writer added a turn needs no read of what the session holds — only of what differs,
read from the stored head upward a page at a time until it meets a live chain (see
:meth:`Store.load_chain_tail`). A session with nothing live (a load after a restart) reads
each chain whole, in one query, and keeps it compact (see
:class:`~agcore_lab.llm.history.MessageHistory`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from agcore_lab.agent.slots import ContextSlot
from agcore_lab.llm.history import MessageHistory

if TYPE_CHECKING:
    from agcore_lab.llm.messages import Message
    from agcore_lab.store.base import LinkRecord, Store

__all__ = ["COMPACT_AT", "FIRST_PAGE", "load_slots"]

FIRST_PAGE = 32
"""Nodes read above a stored head that no live slot holds (after the head itself); each
further page is 4x as long."""
COMPACT_AT = 256
"""Read messages appended to a live prefix stay objects up to this many; more (a roll
forward over many turns), and prefix and read messages are kept compact together — still
O(what differs): only when the read part is the longer one."""


def load_slots(
    store: Store, session_id: str, known: Iterable[ContextSlot] = ()
) -> dict[str, ContextSlot]:
    """The stored slots of ``session_id``, their messages shared with the ``known`` (live)
    slots wherever their chains meet, the rest read from the store."""
    live = [s for s in known if s.chain_nodes is not None and s.messages]
    slots = {}
    for record in store.load_slots(session_id):
        messages, nodes = _chain(store, record.head_node_id, live)
        slots[record.slot_id] = ContextSlot.from_record(record, messages, nodes)
        if slots[record.slot_id].messages:
            live.append(slots[record.slot_id])  # later slots may share this one's chain
    return slots


def _chain(
    store: Store, head: str | None, live: list[ContextSlot]
) -> tuple[MessageHistory, dict[int, str]]:
    if head is None:
        return MessageHistory(), {}
    for slot in live:
        if (
            slot.head_node_id == head
            and slot.chain_position(head, len(slot.messages) - 1) is not None
        ):
            return _prefix(slot, len(slot.messages))
    if not live:  # straight into columns: no object per plain message
        return store.load_chain_history(head)
    # The head first (one row: its depth says where to look in the live slots), then the
    # chain above it a page at a time, until a row is a node a live slot holds: that node's
    # ancestors are that slot's messages up to it.
    tail: list[tuple[LinkRecord, Message]] = []
    cursor, page = head, 1
    while True:
        rows = store.load_chain_tail(cursor, page)
        for j in range(len(rows) - 1, -1, -1):  # newest first: the deepest shared node
            link = rows[j][0]
            for slot in live:
                at = slot.chain_position(link.node_id, link.depth)
                if at is not None:
                    return _rows(rows[j + 1 :] + tail, _prefix(slot, at + 1))
        tail = rows + tail
        if not rows or rows[0][0].parent_node_id is None:  # the whole chain (or no such node)
            return _rows(tail, None)
        cursor, page = rows[0][0].parent_node_id, max(FIRST_PAGE, page * 4)


def _prefix(slot: ContextSlot, count: int) -> tuple[MessageHistory, dict[int, str]]:
    nodes = slot.chain_nodes or {}
    return slot.messages.prefix(count), {i: n for i, n in nodes.items() if i < count}


def _rows(
    rows: list[tuple[LinkRecord, Message]], start: tuple[MessageHistory, dict[int, str]] | None
) -> tuple[MessageHistory, dict[int, str]]:
    """``start`` (a live prefix) followed by the messages of ``rows``; with no ``start``, the
    rows' messages alone, kept compact (see :data:`COMPACT_AT`)."""
    messages, nodes = start if start is not None else (None, {})
    offset = len(messages) if messages is not None else 0
    for index, (link, message) in enumerate(rows):
        if link.node_id != message.id:
            nodes[offset + index] = link.node_id
    if messages is None:
        return MessageHistory.compact(message for _, message in rows), nodes
    if len(rows) > max(len(messages), COMPACT_AT):
        return MessageHistory.compact([*messages, *(message for _, message in rows)]), nodes
    messages.extend(message for _, message in rows)
    return messages, nodes

"""The ``ChainStore`` role of the :class:`~agcore_lab.store.base.Store` protocol."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from agcore_lab.llm.call_note import CallNote
    from agcore_lab.llm.call_record import ModelCall
    from agcore_lab.llm.history import MessageHistory
    from agcore_lab.llm.messages import Message
    from agcore_lab.store.base import CkptMeta, LinkRecord, MemoryWrite, SessionRecord, SlotRecord
    from agcore_lab.store.pending import PendingToolCall

__all__ = ["ChainStore"]


@runtime_checkable
class ChainStore(Protocol):
    """Message chains and slots, and the one atomic write of a change (``commit``).

    One role of :class:`~agcore_lab.store.base.Store`; its async twin is in
    :mod:`agcore_lab.store.aio`.
    """

    def commit(
        self,
        session: SessionRecord,
        *,
        messages: Sequence[Message] = (),
        links: Sequence[LinkRecord] = (),
        slots: Sequence[SlotRecord] = (),
        pending: PendingToolCall | None = None,
        lease_holder: str | None = None,
        change: str = "turn",
        calls: Sequence[ModelCall | CallNote] = (),
        release_lease: bool = False,
        checkpoint: CkptMeta | None = None,
        memory: Sequence[MemoryWrite] = (),
    ) -> int:
        """Write one change atomically: new messages (already-stored ids are skipped), new
        links, upserted slots, a new pending tool call, the model calls that made the change,
        and the session record — only if the store still holds ``session.version`` and no other
        holder's turn lease is live. ``release_lease=True`` also gives ``lease_holder``'s turn
        lease up, in the same transaction (a turn's last write). ``checkpoint``: a checkpoint
        of the state this write leaves (a turn's automatic one), stored with it under the same
        version check, its ``parent_ckpt_id`` set to the session's latest checkpoint and its
        ``memory_version`` to the session's (both read in the same transaction). ``memory``:
        session-memory writes ``(key, value, metadata)`` stored with it (after the
        checkpoint, so they are newer than its ``memory_version``); a write given as a
        :class:`~agcore_lab.store.base.MemoryIfUnset` is stored only if its key has no live
        entry in that transaction, and says afterwards whether it was (its ``written``).

        Returns:
            The new version (``session.version + 1``).

        Raises:
            SessionNotFoundError: The session does not exist.
            StaleSessionError: The store holds another version; nothing was written.
            SessionBusyError: Another writer holds the turn lease; nothing was written.
            StorageError: The write failed; nothing of it was stored.
        """
        ...

    def load_slots(self, session_id: str) -> list[SlotRecord]:
        """The session's slots, in creation order."""
        ...

    def load_chain(self, head_node_id: str) -> list[tuple[LinkRecord, Message]]:
        """The chain ending at ``head_node_id``, oldest message first."""
        ...

    def load_chain_tail(self, head_node_id: str, limit: int) -> list[tuple[LinkRecord, Message]]:
        """The newest ``limit`` nodes of the chain ending at ``head_node_id``, oldest first
        (all of it when shorter; ``[]`` for an unknown node). The first entry's
        ``parent_node_id`` is where the rest of the chain continues (``None``: it is all)."""
        ...

    def load_chain_history(self, head_node_id: str) -> tuple[MessageHistory, dict[int, str]]:
        """The messages of :meth:`load_chain` as a compact history, and the chain nodes
        placed by links (``{index: node_id}``; every other message is its own node). An
        empty history for an unknown node."""
        ...

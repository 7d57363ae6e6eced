"""The ``Store`` protocol and the records it keeps.

Storage model (see docs/design.md): each message is stored once. A slot's history is a chain of
*links* — small rows ``(node_id, parent_node_id, message_id, depth)`` — and a slot records only
the node at its head. Forking a slot shares the chain for free; merging adds links that point at
existing messages; nothing is ever copied. Session memory is an append-only log with a version
number per session, so a later checkpoint can name "memory as of version N".

Store methods are synchronous: they are short local transactions. Every backend must pass the
conformance suite in :mod:`agcore_lab.testing.store_conformance`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from enum import StrEnum
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from agcore_lab.ids import utcnow
from agcore_lab.llm.call_record import ModelCall
from agcore_lab.llm.messages import Message
from agcore_lab.llm.usage import ModelSpend
from agcore_lab.store.pending import PendingToolCall

__all__ = [
    "ChangeRecord",
    "CheckpointSource",
    "CkptMeta",
    "LinkRecord",
    "MemoryEntry",
    "SessionRecord",
    "SlotMode",
    "SlotRecord",
    "Store",
]


class SlotMode(StrEnum):
    """How a slot builds the model's context (one definition, used by the store and the
    agent; a plain string ``"full"`` / ``"focused"`` is accepted wherever a mode is)."""

    Full = "full"
    Focused = "focused"


CheckpointSource = Literal["auto", "manual", "fork", "rollback"]
MergeStrategyName = Literal["append", "replace", "summarize"]


class SessionRecord(BaseModel):
    """The scalar state of one session (its messages and slots live in their own records).

    ``version`` counts the session's state-changing writes. A record handed to a write names
    the version it is based on; the store writes it only if it still holds that version, and
    stores ``version + 1`` (otherwise :class:`~agcore_lab.errors.StaleSessionError`).
    """

    session_id: str
    agent_name: str
    parent_id: str | None = None
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
    turn_index: int = 0
    current_slot_id: str = "main"
    last_summary_turn: int | None = None
    spend: dict[str, ModelSpend] = Field(default_factory=dict)
    metadata: dict[str, JsonValue] = Field(default_factory=dict)
    version: int = 0

    @property
    def prompt_tokens(self) -> int:
        """Prompt tokens over all models."""
        return sum(s.usage.prompt_tokens for s in self.spend.values())

    @property
    def completion_tokens(self) -> int:
        """Completion tokens over all models."""
        return sum(s.usage.completion_tokens for s in self.spend.values())

    @property
    def cost_usd(self) -> float:
        """Cost over all models."""
        return sum(s.cost for s in self.spend.values())


class SlotRecord(BaseModel):
    """One context slot: where its chain ends, and how its context is built."""

    session_id: str
    slot_id: str
    parent_slot_id: str | None = None
    fork_point: int = 0
    merge_base: int = 0
    mode: SlotMode = SlotMode.Full
    head_node_id: str | None = None
    summary_override: str | None = None
    pinned_ids: list[str] = Field(default_factory=list)
    recent_window: int = 20
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
    merge_strategy: MergeStrategyName | None = None


class LinkRecord(BaseModel):
    """One node of a message chain: message ``message_id`` after node ``parent_node_id``."""

    model_config = ConfigDict(frozen=True)

    node_id: str
    parent_node_id: str | None
    message_id: str
    depth: int


class MemoryEntry(BaseModel):
    """One session-memory entry: any JSON value, with metadata and timestamps."""

    model_config = ConfigDict(frozen=True)

    key: str
    value: JsonValue
    metadata: dict[str, JsonValue] = Field(default_factory=dict)
    created_at: datetime
    updated_at: datetime
    version: int


class CkptMeta(BaseModel):
    """One checkpoint: what it is (the flat fields) and the state it restores.

    A checkpoint records only small state: each slot (with the chain node at its head — never
    a copy of the history), the scalars of the session and the memory version.

    Attributes:
        ckpt_id: Time-ordered id; newer checkpoints sort after older ones.
        session_id: The session it belongs to.
        parent_ckpt_id: The checkpoint before it in this session's history (for a fork: the
            checkpoint of the parent session it starts from; for a rollback: its target).
        turn_index: Completed turns at that point.
        created_at: When it was taken (UTC).
        label: A free-form label.
        source: ``auto`` (after a turn), ``manual``, ``fork`` or ``rollback``.
        message_count: Messages in the current slot.
        prompt_tokens: Prompt tokens used by the session so far.
        completion_tokens: Completion tokens used by the session so far.
        cost_usd: Cost of the session so far.
        agent_name: The session's agent then.
        current_slot_id: The current slot then.
        last_summary_turn: The turn of the last automatic summary then.
        memory_version: The session-memory version then.
        slots: Every slot's state, by id.
        spend: Usage and cost per model.
        pending: The tool call that was waiting for approval then, if any.
    """

    model_config = ConfigDict(frozen=True)

    ckpt_id: str
    session_id: str
    parent_ckpt_id: str | None = None
    turn_index: int
    created_at: datetime = Field(default_factory=utcnow)
    label: str | None = None
    source: CheckpointSource = "manual"
    message_count: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    agent_name: str
    current_slot_id: str = "main"
    last_summary_turn: int | None = None
    memory_version: int = 0
    slots: dict[str, SlotRecord] = Field(default_factory=dict)
    spend: dict[str, ModelSpend] = Field(default_factory=dict)
    pending: PendingToolCall | None = None

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens


class ChangeRecord(BaseModel):
    """One entry of a store's change feed (see :meth:`Store.changes_since`).

    Attributes:
        seq: Increasing position in the feed.
        session_id: The session that changed.
        kind: What happened, as a manager event kind (``turn``, ``checkpoint``, ``rollback``,
            ``fork``, ``created``, ``destroyed``, ``approval``, ``agent_switched``, ``slot``).
        ckpt_id: The checkpoint involved, if any.
        new_session_id: For a fork: the new session.
        origin: The store object that wrote it (``Store.origin``); a manager skips its own.
    """

    model_config = ConfigDict(frozen=True)

    seq: int
    session_id: str
    kind: str
    ckpt_id: str | None = None
    new_session_id: str | None = None
    origin: str


@runtime_checkable
class Store(Protocol):
    """Where sessions, messages, slots and memory are kept.

    Thread-safety: implementations must be safe to call from several threads, and a file-backed
    one from several processes on the same file.
    """

    def create_session(
        self,
        record: SessionRecord,
        *,
        slots: Sequence[SlotRecord] = (),
        checkpoint: CkptMeta | None = None,
    ) -> None:
        """Insert a new session and its first slots, in one transaction. Raises
        ``ConflictError`` if the id exists. ``checkpoint``: the session's first checkpoint,
        stored in the same transaction."""
        ...

    def get_session(self, session_id: str) -> SessionRecord | None:
        """The session's record, or ``None``."""
        ...

    def list_sessions(self) -> list[SessionRecord]:
        """All sessions, oldest first."""
        ...

    def child_ids(self, session_id: str) -> list[str]:
        """Ids of the sessions whose parent is ``session_id``, oldest first (an indexed read;
        an unknown id has none)."""
        ...

    def delete_session(self, session_id: str, *, expected_version: int | None = None) -> bool:
        """Remove a session with its messages, links, slots and memory; ``False`` if absent.

        Raises:
            StaleSessionError: ``expected_version`` is given and the store holds another.
            SessionBusyError: Another writer's turn lease is live.
        """
        ...

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
        calls: Sequence[ModelCall] = (),
        release_lease: bool = False,
        checkpoint: CkptMeta | None = None,
        memory: Sequence[tuple[str, JsonValue, dict[str, JsonValue]]] = (),
    ) -> int:
        """Write one change atomically: new messages (already-stored ids are skipped), new
        links, upserted slots, a new pending tool call, the model calls that made the change,
        and the session record — only if the store still holds ``session.version`` and no other
        holder's turn lease is live. ``release_lease=True`` also gives ``lease_holder``'s turn
        lease up, in the same transaction (a turn's last write). ``checkpoint``: a checkpoint
        of the state this write leaves (a turn's automatic one), stored with it under the same
        version check, its ``parent_ckpt_id`` set to the session's latest checkpoint (read in
        the same transaction). ``memory``: session-memory writes ``(key, value, metadata)``
        stored with it (after the checkpoint, so they are newer than its ``memory_version``).

        Returns:
            The new version (``session.version + 1``).

        Raises:
            SessionNotFoundError: The session does not exist.
            StaleSessionError: The store holds another version; nothing was written.
            SessionBusyError: Another writer holds the turn lease; nothing was written.
            StorageError: The write failed; nothing of it was stored.
        """
        ...

    def session_version(self, session_id: str) -> int | None:
        """The stored version of a session, or ``None`` (a single indexed read)."""
        ...

    def acquire_lease(self, session_id: str, holder: str, *, ttl: float) -> int:
        """Take the session's turn lease for ``holder`` for ``ttl`` seconds (or renew it);
        return the stored version.

        Raises:
            SessionBusyError: Another holder's lease is live.
            SessionNotFoundError: No such session.
        """
        ...

    def renew_lease(self, session_id: str, holder: str, *, ttl: float) -> bool:
        """Extend ``holder``'s lease; ``False`` if it does not hold it any more."""
        ...

    def release_lease(self, session_id: str, holder: str) -> None:
        """Give the lease up (no-op if ``holder`` does not hold it)."""
        ...

    @property
    def origin(self) -> str:
        """A token naming this store object in the change feed."""
        ...

    def watch_token(self) -> int:
        """A cheap counter that changes when another connection or process committed."""
        ...

    def changes_since(self, seq: int) -> list[ChangeRecord]:
        """Change-feed entries after ``seq``, oldest first (the feed keeps recent ones)."""
        ...

    def latest_change(self) -> int:
        """The newest ``seq`` of the change feed (0 when empty)."""
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

    def memory_set(
        self, session_id: str, key: str, value: JsonValue, metadata: dict[str, JsonValue]
    ) -> MemoryEntry:
        """Set a memory entry (keeping its first ``created_at``); return it."""
        ...

    def memory_delete(self, session_id: str, key: str) -> bool:
        """Delete a memory entry; ``False`` if there was none."""
        ...

    def memory_entries(
        self, session_id: str, *, at_version: int | None = None
    ) -> list[MemoryEntry]:
        """Live entries, by key; as of ``at_version`` when given."""
        ...

    def memory_version(self, session_id: str) -> int:
        """The number of memory writes so far (0 for none)."""
        ...

    def put_checkpoint(self, ckpt: CkptMeta, *, expected_version: int | None = None) -> None:
        """Store a checkpoint (one small row, whatever the history length).

        Raises:
            StaleSessionError: ``expected_version`` is given and the session moved on.
        """
        ...

    def list_checkpoints(
        self,
        session_id: str | None = None,
        *,
        limit: int | None = None,
        before: str | int | None = None,
    ) -> list[CkptMeta]:
        """Checkpoints of a session (or of all sessions), newest first; at most ``limit``.

        ``before`` pages back: a checkpoint id (``str``) keeps only older checkpoints, a turn
        index (``int``) only those of earlier turns.

        Raises:
            InvalidInputError: ``limit`` is not an int >= 1, or ``before`` is of another type.
        """
        ...

    def get_checkpoint(self, ckpt_id: str) -> CkptMeta | None:
        """One checkpoint by id, or ``None``."""
        ...

    def delete_checkpoints(self, session_id: str, ckpt_ids: Sequence[str] | None = None) -> int:
        """Delete some (or all) of a session's checkpoints; return how many."""
        ...

    def restore_checkpoint(
        self,
        ckpt: CkptMeta,
        session: SessionRecord,
        marker: CkptMeta,
        *,
        create: bool = False,
        lease_holder: str | None = None,
    ) -> int:
        """In one transaction, make ``session`` hold the state of ``ckpt``: its record,
        exactly ``ckpt.slots``, and its memory as of ``ckpt.memory_version`` (copied from
        ``ckpt.session_id`` when that is another session). Then store ``marker`` with the
        memory version after the restore; return that version.

        ``create=True`` makes a new session (a fork) at ``session.version``; otherwise the
        stored session must be at ``session.version`` (it is then bumped by one).

        Raises:
            StaleSessionError, SessionBusyError: As for :meth:`commit`.
        """
        ...

    def list_pending(
        self, session_id: str | None = None, *, include_resolved: bool = False
    ) -> list[PendingToolCall]:
        """Tool calls awaiting approval (overdue ones are moved to EXPIRED first and listed as
        such); with ``include_resolved``, every call ever interrupted."""
        ...

    def get_pending(self, interrupt_id: str) -> PendingToolCall | None:
        """One pending-call record, or ``None``."""
        ...

    def decide_pending(
        self,
        *,
        session_id: str,
        run_id: str,
        interrupt_id: str,
        to_status: str,
        decision: dict[str, JsonValue] | None = None,
        result: JsonValue = None,
        from_status: str = "PENDING_APPROVAL",
        executor: str | None = None,
        lease_seconds: float | None = None,
    ) -> PendingToolCall:
        """Compare-and-set a call's status in one write transaction: exactly one of any number
        of concurrent callers wins. Moving to ``APPROVED_EXECUTING`` records ``executor`` and
        its lease (``lease_seconds`` from now).

        Raises:
            RunNotFoundError: Unknown interrupt (404).
            ConflictError: Run mismatch, or not in ``from_status`` any more (409).
            GoneError: Past its expiry; it is moved to EXPIRED first (410).
        """
        ...

    def insert_calls(self, calls: Sequence[ModelCall]) -> None:
        """Store model-call records in a write of their own (calls of a failed turn, of a
        summary); ids stored already are skipped."""
        ...

    def list_calls(
        self,
        session_id: str | None = None,
        *,
        call_id: str | None = None,
        turn_index: int | None = None,
        last: int | None = None,
    ) -> list[ModelCall]:
        """Model calls of a session (or all; or one ``call_id``; or one turn), oldest first;
        only the newest ``last`` when given. Each call's request is rebuilt from the stored
        chains, and ``abandoned`` says whether a rollback left its branch.

        Checkpoint links: ``put_checkpoint`` links the session's calls not linked yet to the
        new checkpoint (``ModelCall.ckpt_id``); ``delete_checkpoints`` deletes the calls
        linked to the checkpoints it deletes; ``delete_session`` deletes all of them.
        """
        ...

    def renew_execution(self, interrupt_id: str, executor: str, *, ttl: float) -> bool:
        """Extend the executor lease of an ``APPROVED_EXECUTING`` call; ``False`` if the call
        is no longer run by ``executor``."""
        ...

    def close(self) -> None:
        """Release connections. The store is unusable afterwards."""
        ...

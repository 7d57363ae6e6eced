"""The ``Store`` protocol and the records it keeps.

Storage model (see docs/design.md): each message is stored once. A slot's history is a chain of
*links* — small rows ``(node_id, parent_node_id, message_id, depth)`` — and a slot records only
the node at its head. Forking a slot shares the chain for free; merging adds links that point at
existing messages; nothing is ever copied. Session memory is an append-only log with a version
number per session, so a later checkpoint can name "memory as of version N".

Store methods are synchronous: they are short transactions. The protocol is split by role
(:mod:`agcore_lab.store.roles`); the engine awaits its async twin (:mod:`agcore_lab.store.aio`).
Every backend must pass the conformance suite in :mod:`agcore_lab.testing.store_conformance`.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from agcore_lab.ids import utcnow
from agcore_lab.llm.usage import ModelSpend
from agcore_lab.store.pending import PendingToolCall
from agcore_lab.store.roles import (
    CallStore,
    ChainStore,
    ChangeFeed,
    CheckpointStore,
    FrameReader,
    MemoryStore,
    PendingStore,
    SessionStore,
)

__all__ = [
    "ChangeRecord",
    "CheckpointSource",
    "CkptMeta",
    "LinkRecord",
    "MemoryEntry",
    "MemoryIfUnset",
    "MemoryWrite",
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


class MemoryIfUnset:
    """A session-memory write of a commit (``Store.commit(memory=...)``) that is stored only
    if ``key`` has no live entry when the commit runs, decided in its transaction. The store
    sets ``written`` once the commit is stored: ``True`` when this value was written, ``False``
    when the key was set already (nothing written for it); ``None`` until then (and when the
    commit failed).

    Example:
        >>> from agcore_lab.store.sqlite import SqliteStore
        >>> store = SqliteStore(":memory:")
        >>> store.create_session(SessionRecord(session_id="s1", agent_name="a"))
        >>> first = MemoryIfUnset("summary", "done", {})
        >>> store.commit(SessionRecord(session_id="s1", agent_name="a"), memory=[first])
        1
        >>> again = MemoryIfUnset("summary", "other", {})
        >>> store.commit(SessionRecord(session_id="s1", agent_name="a", version=1), memory=[again])
        2
        >>> first.written, again.written, [e.value for e in store.memory_entries("s1")]
        (True, False, ['done'])
    """

    __slots__ = ("key", "metadata", "value", "written")

    def __init__(self, key: str, value: JsonValue, metadata: dict[str, JsonValue]) -> None:
        self.key, self.value, self.metadata = key, value, metadata
        self.written: bool | None = None

    def __repr__(self) -> str:
        return f"MemoryIfUnset({self.key!r}, {self.value!r}, written={self.written})"


MemoryWrite = tuple[str, JsonValue, dict[str, JsonValue]] | MemoryIfUnset
"""One session-memory write of a commit: ``(key, value, metadata)``, or a
:class:`MemoryIfUnset`."""


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
class Store(
    SessionStore,
    ChainStore,
    CheckpointStore,
    PendingStore,
    MemoryStore,
    CallStore,
    ChangeFeed,
    FrameReader,
    Protocol,
):
    """Where sessions, messages, slots and memory are kept: the union of the store's roles.

    Each role is a small protocol of its own in :mod:`agcore_lab.store.roles`
    (:class:`~agcore_lab.store.roles.SessionStore`, ``ChainStore``, ``CheckpointStore``,
    ``PendingStore``, ``MemoryStore``, ``CallStore``, ``ChangeFeed``, ``FrameReader``); a
    backend implements them all. The engine awaits the async twin,
    :class:`~agcore_lab.store.aio.AsyncStore`, built from a ``Store`` by
    :func:`~agcore_lab.store.aio.as_async`.

    Thread-safety: implementations must be safe to call from several threads, and a file-backed
    one from several processes on the same file.
    """

    def close(self) -> None:
        """Release connections. The store is unusable afterwards."""
        ...

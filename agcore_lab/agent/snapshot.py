"""``SessionSnapshot``: the portable, versioned export/import format of one session state.

Storage never uses it (checkpoints point into stored message chains instead); it is what you
save to a file, send elsewhere, or load into another database. The format is version 2.

Forward-compatible: a field this version does not know (written by a newer agcore_lab) is
kept in ``extra`` — of the snapshot, a slot or a memory entry — and written back, at its
place, when the snapshot is dumped again; an imported session keeps its snapshot's extras and
its exports carry them. A field that is missing takes its default (``turn_index`` 0, the
current slot ``main``, ``slots`` one empty ``main`` slot, ...). Strict where it matters: a
snapshot of another version, or with wrongly typed fields, missing identity (``session_id``,
``agent_name``) or dangling references, is refused with
:class:`~agcore_lab.errors.UnprocessableError` (HTTP 422) before anything is written.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
    model_validator,
)

from agcore_lab.errors import UnprocessableError
from agcore_lab.ids import new_id, utcnow
from agcore_lab.llm.messages import Message
from agcore_lab.llm.usage import ModelSpend
from agcore_lab.store.base import LinkRecord, MergeStrategyName, SlotMode, SlotRecord

__all__ = [
    "EXTRA_KEY",
    "NAME_PATTERN",
    "SNAPSHOT_VERSION",
    "SessionSnapshot",
    "SnapshotMemoryEntry",
    "SnapshotSlot",
]

SNAPSHOT_VERSION: Literal[2] = 2
# What Agent and ContextSlot accept: a snapshot must not store what cannot be loaded again.
NAME_PATTERN = r"^[A-Za-z0-9_.:-]{1,64}$"
EXTRA_KEY = "snapshot_extra"  # where an imported session keeps its snapshot's unknown fields


class _ForwardCompatible(BaseModel):
    """Unknown fields go to ``extra`` on the way in and back to their place on the way out."""

    model_config = ConfigDict(extra="forbid")

    extra: dict[str, JsonValue] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _keep_unknown(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        known = set(cls.model_fields)
        unknown = {k: v for k, v in data.items() if k not in known}
        if not unknown:
            return data
        given = data.get("extra")
        kept = dict(given) if isinstance(given, dict) else {}
        return {k: v for k, v in data.items() if k in known} | {"extra": {**kept, **unknown}}

    @model_serializer(mode="wrap")
    def _write_back(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        extra = data.pop("extra", None) or {}
        return {**extra, **data}


class SnapshotSlot(_ForwardCompatible):
    """One slot: its settings and its history as message ids (messages are listed once)."""

    slot_id: str = Field(pattern=NAME_PATTERN)
    parent_slot_id: str | None = None
    fork_point: int = Field(default=0, ge=0)
    merge_base: int = Field(default=0, ge=0)
    mode: SlotMode = SlotMode.Full
    summary_override: str | None = None
    pinned_ids: list[str] = Field(default_factory=list)
    recent_window: int = Field(default=20, ge=1)
    merge_strategy: MergeStrategyName | None = None
    message_ids: list[str] = Field(default_factory=list)


def _main_slot() -> list[SnapshotSlot]:
    return [SnapshotSlot(slot_id="main")]


class SnapshotMemoryEntry(_ForwardCompatible):
    """One session-memory entry."""

    key: str
    value: JsonValue
    metadata: dict[str, JsonValue] = Field(default_factory=dict)
    created_at: datetime
    updated_at: datetime


class SessionSnapshot(_ForwardCompatible):
    """A whole session state, self-contained.

    Attributes:
        version: Always 2.
        session_id: The session it was taken from.
        agent_name: The agent that ran it.
        turn_index: Completed turns.
        current_slot_id: The slot turns go to.
        slots: Every slot, its history as message ids.
        messages: Every message any slot holds, once each.
        memory: Session memory.
        ckpt_id: The checkpoint it was exported from, if any.
        session_version: The stored version of the session when the snapshot was read
            (``rollback_load``, ``to_snapshot``); ``manager.replace`` refuses to apply a
            snapshot if the session moved on since.
        extra: Fields this version does not know, kept and written back on export.

    Example:
        >>> snap = SessionSnapshot.parse(
        ...     {"version": 2, "session_id": "s", "agent_name": "a", "from_the_future": 1}
        ... )
        >>> snap.extra, [s.slot_id for s in snap.slots]
        ({'from_the_future': 1}, ['main'])
        >>> snap.model_dump(mode="json")["from_the_future"]
        1
    """

    version: Literal[2] = SNAPSHOT_VERSION
    session_id: str
    agent_name: str = Field(pattern=NAME_PATTERN)
    parent_id: str | None = None
    turn_index: int = Field(default=0, ge=0)
    current_slot_id: str = "main"
    last_summary_turn: int | None = None
    spend: dict[str, ModelSpend] = Field(default_factory=dict)
    slots: list[SnapshotSlot] = Field(default_factory=_main_slot)
    messages: list[Message] = Field(default_factory=list)
    memory: list[SnapshotMemoryEntry] = Field(default_factory=list)
    ckpt_id: str | None = None
    session_version: int | None = Field(default=None, ge=0)
    exported_at: datetime = Field(default_factory=utcnow)

    @classmethod
    def parse(cls, data: SessionSnapshot | dict[str, Any] | str | bytes) -> SessionSnapshot:
        """Validate a snapshot given as a model, a dict or JSON text.

        Raises:
            UnprocessableError: Not version 2, missing or wrongly typed fields, or slots that
                name messages the snapshot does not carry.
        """
        if isinstance(data, SessionSnapshot):
            snapshot = data
        else:
            try:
                raw = json.loads(data) if isinstance(data, str | bytes) else data
            except ValueError as exc:  # JSONDecodeError, or bytes that are not UTF-8/16/32
                raise UnprocessableError(f"the snapshot is not valid JSON: {exc}") from exc
            if not isinstance(raw, dict):
                raise UnprocessableError("a snapshot must be a JSON object")
            if raw.get("version") != SNAPSHOT_VERSION:
                raise UnprocessableError(
                    f"snapshot version {raw.get('version')!r} is not supported; "
                    f"this agcore_lab reads version {SNAPSHOT_VERSION}"
                )
            try:
                snapshot = cls.model_validate(raw)
            except ValidationError as exc:
                problems = "; ".join(
                    f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:5]
                )
                raise UnprocessableError(f"invalid snapshot: {problems}") from exc
        snapshot.check_references()
        try:  # NaN and Infinity are not JSON: the store would refuse them halfway
            json.dumps(snapshot.model_dump(), allow_nan=False, default=str)
        except ValueError as exc:
            raise UnprocessableError("the snapshot holds NaN or Infinity numbers") from exc
        return snapshot

    def check_references(self) -> None:
        """Every slot's message ids must be in ``messages``; the current slot must exist;
        slot ids must be unique."""
        names = [s.slot_id for s in self.slots]
        if len(set(names)) != len(names):
            raise UnprocessableError(f"slot ids repeat: {sorted(names)}")
        known = {m.id for m in self.messages}
        for slot in self.slots:
            missing = [i for i in slot.message_ids if i not in known]
            if missing:
                raise UnprocessableError(
                    f"slot {slot.slot_id!r} names messages the snapshot lacks: {missing[:3]}"
                )
        if self.current_slot_id not in {s.slot_id for s in self.slots}:
            raise UnprocessableError(f"the current slot {self.current_slot_id!r} is not in slots")

    def chains(self, session_id: str) -> tuple[list[LinkRecord], list[SlotRecord]]:
        """The links that rebuild every slot's chain (shared prefixes shared again), and the
        slot records pointing at their heads, for a session ``session_id``."""
        nodes: dict[tuple[str | None, str], LinkRecord] = {}
        placed: set[str] = set()
        links: list[LinkRecord] = []
        slots: list[SlotRecord] = []
        for slot in self.slots:
            head: str | None = None
            for depth, message_id in enumerate(slot.message_ids):
                link = nodes.get((head, message_id))
                if link is None:
                    home = message_id not in placed
                    placed.add(message_id)
                    link = LinkRecord(
                        node_id=message_id if home else new_id("node"),
                        parent_node_id=head,
                        message_id=message_id,
                        depth=depth,
                    )
                    nodes[(head, message_id)] = link
                    links.append(link)
                head = link.node_id
            settings = slot.model_dump(exclude={"message_ids", "extra"})
            slots.append(SlotRecord(session_id=session_id, head_node_id=head, **settings))
        return links, slots

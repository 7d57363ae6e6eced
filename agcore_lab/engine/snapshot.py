"""Export and import of :class:`SessionSnapshot` over a store.

The snapshot model itself lives in :mod:`agcore_lab.agent.snapshot` (sessions build from and
to it, so it sits below the engine); it is re-exported here.
"""

from __future__ import annotations

from pydantic import JsonValue

from agcore_lab.agent.snapshot import (
    EXTRA_KEY,
    SNAPSHOT_VERSION,
    SessionSnapshot,
    SnapshotMemoryEntry,
    SnapshotSlot,
)
from agcore_lab.ids import new_id
from agcore_lab.llm.messages import Message
from agcore_lab.store.aio import AsyncStore
from agcore_lab.store.base import CkptMeta, SessionRecord

__all__ = [
    "SNAPSHOT_VERSION",
    "SessionSnapshot",
    "SnapshotMemoryEntry",
    "SnapshotSlot",
    "export_snapshot",
    "import_snapshot",
]


async def export_snapshot(store: AsyncStore, meta: CkptMeta) -> SessionSnapshot:
    """The state of checkpoint ``meta`` as a snapshot (chains loaded from ``store``)."""
    messages: dict[str, Message] = {}
    slots: list[SnapshotSlot] = []
    for slot in meta.slots.values():
        chain = await store.aload_chain(slot.head_node_id) if slot.head_node_id else []
        for _, message in chain:
            messages.setdefault(message.id, message)
        settings = slot.model_dump(
            exclude={"session_id", "head_node_id", "created_at", "updated_at"}
        )
        slots.append(SnapshotSlot(message_ids=[m.id for _, m in chain], **settings))
    memory = await store.amemory_entries(meta.session_id, at_version=meta.memory_version)
    record = await store.aget_session(meta.session_id)
    kept = record.metadata.get(EXTRA_KEY) if record is not None else None
    kept = kept if isinstance(kept, dict) else {}
    slot_extra = kept.get("slots")
    if isinstance(slot_extra, dict):
        for index, slot_snap in enumerate(slots):
            found = slot_extra.get(slot_snap.slot_id)
            if isinstance(found, dict):
                slots[index] = slot_snap.model_copy(update={"extra": dict(found)})
    top = kept.get("snapshot")
    return SessionSnapshot(
        extra=dict(top) if isinstance(top, dict) else {},
        session_id=meta.session_id,
        agent_name=meta.agent_name,
        turn_index=meta.turn_index,
        current_slot_id=meta.current_slot_id,
        last_summary_turn=meta.last_summary_turn,
        spend=meta.spend,
        slots=slots,
        messages=list(messages.values()),
        memory=[SnapshotMemoryEntry(**e.model_dump(exclude={"version"})) for e in memory],
        ckpt_id=meta.ckpt_id,
    )


def _kept_extra(snap: SessionSnapshot) -> dict[str, JsonValue]:
    # Unknown fields survive an import: the session keeps them, its exports write them back.
    slots: dict[str, JsonValue] = {s.slot_id: dict(s.extra) for s in snap.slots if s.extra}
    if not snap.extra and not slots:
        return {}
    return {EXTRA_KEY: {"snapshot": dict(snap.extra), "slots": slots}}


async def import_snapshot(store: AsyncStore, snap: SessionSnapshot) -> str:
    """Write a validated snapshot into ``store`` as a new session with one checkpoint; return
    the new session's id. A failure midway deletes what was written."""
    session_id = new_id("ses")
    links, slots = snap.chains(session_id)
    record = SessionRecord(
        session_id=session_id,
        agent_name=snap.agent_name,
        turn_index=snap.turn_index,
        current_slot_id=snap.current_slot_id,
        last_summary_turn=snap.last_summary_turn,
        spend=snap.spend,
        metadata={"imported_from": snap.session_id, **_kept_extra(snap)},
    )
    await store.acreate_session(record)
    try:
        await store.acommit(record, messages=snap.messages, links=links, slots=slots)
        for entry in snap.memory:
            await store.amemory_set(session_id, entry.key, entry.value, entry.metadata)
        meta = CkptMeta(
            ckpt_id=new_id("ckpt"),
            session_id=session_id,
            turn_index=snap.turn_index,
            label=f"imported from {snap.session_id}",
            source="manual",
            agent_name=snap.agent_name,
            current_slot_id=snap.current_slot_id,
            last_summary_turn=snap.last_summary_turn,
            memory_version=await store.amemory_version(session_id),
            # As stored: a message already stored elsewhere gets a node of its own.
            slots={s.slot_id: s for s in await store.aload_slots(session_id)},
            spend=snap.spend,
            message_count=next(
                len(s.message_ids) for s in snap.slots if s.slot_id == snap.current_slot_id
            ),
            prompt_tokens=record.prompt_tokens,
            completion_tokens=record.completion_tokens,
            cost_usd=record.cost_usd,
        )
        await store.aput_checkpoint(meta)
    except BaseException:
        await store.adelete_session(session_id)
        raise
    return session_id

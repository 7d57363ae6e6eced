"""``SessionSnapshot``: export, import (same or another database), and what is refused."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agcore_lab import (
    Agent,
    AgentSession,
    RuntimeBundle,
    SessionManager,
    SessionSnapshot,
    SqliteStore,
    UnprocessableError,
)

MakeManager = Callable[..., SessionManager]
State = Callable[[AgentSession], dict[str, Any]]
Counts = Callable[[SessionManager], dict[str, int]]


def _rich_session(manager: SessionManager, agent: Agent) -> tuple[str, str]:
    """A session whose slots share a prefix and a merge (main moved on after the fork), with
    memory and a Focused slot; returns its id and a checkpoint of that state."""
    sid = manager.create_sync(agent)
    session = manager.get_sync(sid)
    manager.submit_turn_sync(sid, "shared start")
    session.session_memory.set("facts", {"capital": "Paris"}, {"source": "user"})
    session.fork_slot_sync("side", switch=True)
    manager.submit_turn_sync(sid, "on the side")
    session.switch_slot_sync("main")
    manager.submit_turn_sync(sid, "main moves on")
    session.merge_slot_sync("side")
    session.set_slot_mode_sync("focused", recent_window=2, summary_override="a summary")
    session.pin_message_sync(session.messages[0].id)
    return sid, manager.checkpoint_sync(sid, label="to export")


def test_export_and_import_round_trip(
    make_manager: MakeManager, agent: Agent, state: State, tmp_path: Path
) -> None:
    manager = make_manager()
    sid, ckpt = _rich_session(manager, agent)
    expected = state(manager.get_sync(sid))
    source_meta = manager.checkpointer.get_checkpoint_sync(ckpt)

    text = manager.checkpointer.export_snapshot_sync(ckpt).model_dump_json()
    raw = json.loads(text)
    assert raw["version"] == 2 and raw["session_id"] == sid and raw["ckpt_id"] == ckpt
    assert [s["slot_id"] for s in raw["slots"]] == ["main", "side"]
    assert len(raw["messages"]) == 6  # each message once, however many slots hold it
    assert [m["key"] for m in raw["memory"]] == ["facts"]

    # Into the same database (its messages are stored already) and into another one.
    other = SqliteStore(tmp_path / "other.db")
    elsewhere = SessionManager(bundle=RuntimeBundle(store=other, prices=manager.bundle.prices))
    try:
        for target, recover in [
            (manager, lambda new: make_manager().recover_sync(new)),
            (elsewhere, lambda new: elsewhere.recover_sync(new, agent=agent)),
        ]:
            new_id = target.checkpointer.import_snapshot_sync(text)
            assert new_id != sid
            assert state(recover(new_id)) == expected
            record = target.store.get_session(new_id)
            assert record is not None and record.metadata == {"imported_from": sid}
            (meta,) = target.checkpointer.list_checkpoints_sync(new_id)
            assert meta.label == f"imported from {sid}" and meta.turn_index == 3
            assert (meta.message_count, meta.total_tokens, meta.cost_usd) == (
                source_meta.message_count,
                source_meta.total_tokens,
                source_meta.cost_usd,
            )
        assert state(manager.get_sync(sid)) == expected  # the source is untouched
    finally:
        other.close()


def test_snapshot_objects_and_dicts_import_too(manager: SessionManager, agent: Agent) -> None:
    sid, ckpt = _rich_session(manager, agent)
    snapshot = manager.checkpointer.export_snapshot_sync(ckpt)
    assert isinstance(snapshot, SessionSnapshot) and snapshot.version == 2
    for given in (snapshot, snapshot.model_dump(mode="json"), snapshot.model_dump_json().encode()):
        new_id = manager.checkpointer.import_snapshot_sync(given)
        assert manager.recover_sync(new_id).turn_index == 3


def _snapshot(manager: SessionManager, agent: Agent) -> dict[str, Any]:
    sid, ckpt = _rich_session(manager, agent)
    return json.loads(manager.checkpointer.export_snapshot_sync(ckpt).model_dump_json())  # type: ignore[no-any-return]


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], Any]:
    def change(raw: dict[str, Any]) -> Any:
        *parents, last = path.split(".")
        node: Any = raw
        for key in parents:
            node = node[int(key)] if key.isdigit() else node[key]
        node[int(last) if last.isdigit() else last] = value
        return raw

    return change


def _drop(key: str) -> Callable[[dict[str, Any]], Any]:
    def change(raw: dict[str, Any]) -> Any:
        del raw[key]
        return raw

    return change


def _dangling(raw: dict[str, Any]) -> Any:
    raw["slots"][1]["message_ids"].append("msg_not_in_the_snapshot")
    return raw


def _nan_in_memory(raw: dict[str, Any]) -> Any:
    return json.dumps(raw).replace('"capital": "Paris"', '"capital": NaN')


BAD = {
    "version 1": _set("version", 1),
    "version 3": _set("version", 3),
    "version as text": _set("version", "2"),
    "no version": _drop("version"),
    "no agent_name": _drop("agent_name"),
    "no session_id": _drop("session_id"),
    "turn_index as text": _set("turn_index", "three"),
    "negative turn_index": _set("turn_index", -1),
    "slots not a list": _set("slots", "main"),
    "a message of an unknown role": _set("messages.0.role", "alien"),
    "a message date that is no date": _set("messages.0.created_at", "yesterday"),
    "memory entry without a key": _set("memory.0.key", None),
    "unloadable slot id": _set("slots.1.slot_id", "not a slot id!"),
    "unloadable agent name": _set("agent_name", "no spaces allowed"),
    "recent window 0": _set("slots.0.recent_window", 0),
    "the same slot twice": lambda raw: {**raw, "slots": [raw["slots"][0]] * 2},
    "unknown current slot": _set("current_slot_id", "elsewhere"),
    "dangling message id": _dangling,
    "NaN in memory": _nan_in_memory,
    "not JSON": lambda raw: "{this is not json",
    "not UTF-8 bytes": lambda raw: b"\xff\xfe{",
    "a JSON array": lambda raw: "[1, 2, 3]",
    "JSON null": lambda raw: "null",
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_snapshots_are_refused_and_nothing_is_written(
    manager: SessionManager, agent: Agent, counts: Counts, case: str
) -> None:
    bad = BAD[case](copy.deepcopy(_snapshot(manager, agent)))
    before = counts(manager)
    with pytest.raises(UnprocessableError) as info:
        manager.checkpointer.import_snapshot_sync(bad)
    assert info.value.to_problem()["status"] == 422
    assert counts(manager) == before


@pytest.mark.parametrize(
    "missing",
    [
        ["memory"],
        ["ckpt_id", "exported_at", "parent_id"],
        ["spend", "last_summary_turn"],
        ["slots.mode", "slots.pinned_ids", "slots.recent_window", "slots.summary_override"],
    ],
)
def test_a_snapshot_without_optional_fields_still_loads(
    manager: SessionManager, agent: Agent, missing: list[str]
) -> None:
    # Fields added to the format later get defaults, so older snapshots (without them) load.
    raw = _snapshot(manager, agent)
    for field in missing:
        if field.startswith("slots."):
            for slot in raw["slots"]:
                del slot[field.removeprefix("slots.")]
        else:
            del raw[field]
    new_id = manager.checkpointer.import_snapshot_sync(raw)
    session = manager.recover_sync(new_id)
    assert session.turn_index == 3 and len(session.slots["main"].messages) == 6
    if "memory" in missing:
        assert session.session_memory.to_dict() == {}
    if "slots.mode" in missing:
        assert {s.mode.value for s in session.slots.values()} == {"full"}
    assert manager.submit_turn_sync(new_id, "still works").turn_index == 4


def test_missing_slots_current_slot_and_turn_index_take_their_defaults(
    manager: SessionManager, agent: Agent
) -> None:
    # The design: missing fields take defaults, slots included (one empty main slot).
    raw = _snapshot(manager, agent)
    for field in ("slots", "current_slot_id", "turn_index"):
        del raw[field]
    snap = SessionSnapshot.parse(raw)
    assert [s.slot_id for s in snap.slots] == ["main"] and snap.slots[0].message_ids == []
    assert snap.current_slot_id == "main" and snap.turn_index == 0
    new_id = manager.checkpointer.import_snapshot_sync(raw)
    session = manager.recover_sync(new_id)
    assert session.turn_index == 0 and session.messages == []
    assert manager.submit_turn_sync(new_id, "fresh start").turn_index == 1


def test_unknown_fields_are_kept_in_extra_and_written_back(
    manager: SessionManager, agent: Agent
) -> None:
    raw = _snapshot(manager, agent)
    raw["written_by"] = {"agcore": "9.9", "features": ["tachyons"]}
    raw["slots"][0]["colour"] = "teal"
    raw["memory"][0]["ttl"] = 60
    snap = SessionSnapshot.parse(json.dumps(raw))
    assert snap.extra == {"written_by": {"agcore": "9.9", "features": ["tachyons"]}}
    assert snap.slots[0].extra == {"colour": "teal"} and snap.memory[0].extra == {"ttl": 60}
    dumped = snap.model_dump(mode="json")
    assert dumped["written_by"] == raw["written_by"] and "extra" not in dumped
    assert dumped["slots"][0]["colour"] == "teal" and dumped["memory"][0]["ttl"] == 60
    assert SessionSnapshot.parse(snap.model_dump_json()) == snap
    # Through the store: an imported session keeps them and its exports carry them again.
    new_id = manager.checkpointer.import_snapshot_sync(raw)
    ckpt = manager.checkpointer.list_checkpoints_sync(new_id)[0].ckpt_id
    again = manager.checkpointer.export_snapshot_sync(ckpt).model_dump(mode="json")
    assert again["written_by"] == raw["written_by"]
    assert again["slots"][0]["colour"] == "teal"
    # Strict where the design asks: the version.
    with pytest.raises(UnprocessableError, match="version 3"):
        SessionSnapshot.parse({**raw, "version": 3})

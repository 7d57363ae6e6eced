"""The recorder hashes each request incrementally; it must equal the hash from scratch, through
forks, merges, Focused windows, pins, rollbacks and reloads."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from agcore_lab import Agent, ScriptedModel, SessionManager, SqliteStore, ToolCall
from agcore_lab.agent.slots import MergeStrategy, SlotMode
from agcore_lab.llm.call_record import request_hash


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _script(messages: object) -> str | ToolCall:
    count = len(messages)  # type: ignore[arg-type]
    return ToolCall(name="add", arguments={"a": count, "b": 1}) if count % 4 == 1 else f"a{count}"


OPS = st.lists(
    st.sampled_from(
        ["turn", "turn", "turn", "fork", "merge", "focus", "full", "pin", "rollback", "forward"]
    ),
    min_size=3,
    max_size=14,
)


@settings(max_examples=25, deadline=None)
@given(ops=OPS, system=st.booleans())
def test_recorded_hashes_equal_hashes_from_scratch(
    tmp_path_factory: object, ops: list[str], system: bool
) -> None:
    path = Path(tmp_path_factory.mktemp("h")) / "h.db"  # type: ignore[attr-defined]
    manager = SessionManager(SqliteStore(path))
    prompt = "You add." if system else ""
    sid = manager.create_sync(
        Agent(name="h", system_prompt=prompt, model=ScriptedModel(_script), tools=[add])
    )
    forks = 0
    for op in ops:
        session = manager.get_sync(sid)
        if op == "turn":
            manager.submit_turn_sync(sid, f"question {len(session.messages)}")
        elif op == "fork":
            forks += 1
            session.fork_slot_sync(f"f{forks}", switch=True)
        elif op == "merge" and session.current_slot.parent_slot_id:
            child = session.current_slot_id
            session.switch_slot_sync(session.current_slot.parent_slot_id)
            session.merge_slot_sync(child, strategy=MergeStrategy.Append)
        elif op == "focus":
            session.set_slot_mode_sync(SlotMode.Focused, recent_window=3, summary_override="s")
        elif op == "full":
            session.set_slot_mode_sync(SlotMode.Full)
        elif op == "pin" and session.messages:
            session.pin_message_sync(session.messages[0].id)
        elif op == "rollback":
            ckpts = manager.checkpointer.list_checkpoints_sync(sid)
            manager.checkpointer.rollback_sync(sid, ckpts[len(ckpts) // 2].ckpt_id)
        elif op == "forward":  # to the oldest, then forward again: messages re-read
            ckpts = manager.checkpointer.list_checkpoints_sync(sid)
            manager.checkpointer.rollback_sync(sid, ckpts[-1].ckpt_id)
            furthest = max(ckpts, key=lambda c: c.message_count)
            manager.checkpointer.rollback_sync(sid, furthest.ckpt_id)
    manager.submit_turn_sync(sid, "last")
    for call in manager.model_calls_sync(sid):
        assert call.request_hash == request_hash(
            call.request_messages, call.tools, call.model, call.params
        ), call

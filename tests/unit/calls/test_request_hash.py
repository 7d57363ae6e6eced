"""A turn does not hash its request: the store derives each call's hash when it is read, from
the stored parts. It must equal the hash of the request as the model received it, through
forks, merges, Focused windows, pins, rollbacks and reloads; and where the recorder does hash
(a listener or redactor is set) its incremental hash must be the same value."""

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


class _Live:
    """The script, and the hash of every request exactly as the model received it."""

    def __init__(self) -> None:
        self.hashes: list[str] = []
        self.tools = Agent(name="t", model=ScriptedModel(["x"]), tools=[add]).tool_specs

    def __call__(self, messages: object) -> str | ToolCall:
        self.hashes.append(request_hash(list(messages), self.tools, "scripted", {}))  # type: ignore[call-overload]
        return _script(messages)


def _apply(manager: SessionManager, sid: str, op: str, forks: int) -> int:
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
    return forks


@settings(max_examples=25, deadline=None)
@given(ops=OPS, system=st.booleans(), listen=st.booleans())
def test_recorded_hashes_equal_the_hashes_of_the_requests_sent(
    tmp_path_factory: object, ops: list[str], system: bool, listen: bool
) -> None:
    path = Path(tmp_path_factory.mktemp("h")) / "h.db"  # type: ignore[attr-defined]
    manager = SessionManager(SqliteStore(path))
    heard: list[str] = []
    if listen:  # the recorder hashes as it sends (incrementally): stored with the call
        manager.bundle.call_listeners.append(lambda call: heard.append(call.request_hash))
    live = _Live()
    prompt = "You add." if system else ""
    sid = manager.create_sync(
        Agent(name="h", system_prompt=prompt, model=ScriptedModel(live), tools=[add])
    )
    forks = 0
    for op in ops:
        forks = _apply(manager, sid, op, forks)
    manager.submit_turn_sync(sid, "last")
    calls = manager.model_calls_sync(sid)
    assert [c.request_hash for c in calls] == live.hashes
    if listen:
        assert heard == live.hashes
    for call in calls:
        assert call.request_hash == request_hash(
            call.request_messages, call.tools, call.model, call.params
        ), call

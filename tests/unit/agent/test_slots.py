"""Context slots: fork, switch, merge (Append / Replace / Summarize), Focused context."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from agcore_lab import (
    Agent,
    AgentSession,
    AssistantMessage,
    ContextSlot,
    InvalidInputError,
    MergeStrategy,
    Message,
    ScriptedModel,
    SlotMode,
    SlotNotFoundError,
    SqliteStore,
    SummaryConfig,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from agcore_lab.agent.slots import SUMMARY_HEADER, build_context


def _echo_session(store: SqliteStore | None = None) -> AgentSession:
    model = ScriptedModel(lambda messages: f"re: {messages[-1].text}")
    return AgentSession(Agent(name="a", model=model), store=store)


def _texts(messages: Sequence[Message]) -> list[str]:
    return [m.text for m in messages]


def _rows(session: AgentSession, table: str) -> int:
    store = session.store
    assert isinstance(store, SqliteStore)
    return int(store.connection.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


def test_fork_copies_the_history_and_remembers_parent_and_fork_point() -> None:
    session = _echo_session()
    session.submit_turn_sync("one")
    child = session.fork_slot_sync("side")
    assert child.messages == session.slots["main"].messages
    assert child.messages is not session.slots["main"].messages
    assert (child.parent_slot_id, child.fork_point, child.merge_base) == ("main", 2, 2)
    assert session.current_slot_id == "main"  # switch=False by default

    session.submit_turn_sync("main only")
    session.switch_slot_sync("side")
    session.submit_turn_sync("side only")
    assert _texts(session.slots["main"].messages) == [
        "one",
        "re: one",
        "main only",
        "re: main only",
    ]
    assert _texts(session.slots["side"].messages) == [
        "one",
        "re: one",
        "side only",
        "re: side only",
    ]


def test_fork_stores_no_message_twice() -> None:
    session = _echo_session()
    session.submit_turn_sync("one")
    messages, links = _rows(session, "messages"), _rows(session, "message_links")
    session.fork_slot_sync("side", switch=True)
    assert (_rows(session, "messages"), _rows(session, "message_links")) == (messages, links)
    assert session.current_slot_id == "side"
    session.submit_turn_sync("two")
    assert _rows(session, "messages") == messages + 2  # only the new turn's messages


def test_fork_from_a_named_slot_and_bad_fork_requests() -> None:
    session = _echo_session()
    session.fork_slot_sync("a", switch=True)
    session.submit_turn_sync("in a")
    grandchild = session.fork_slot_sync("b", from_slot="a")
    assert grandchild.parent_slot_id == "a" and grandchild.fork_point == 2
    with pytest.raises(InvalidInputError, match="exists already"):
        session.fork_slot_sync("a")
    with pytest.raises(InvalidInputError, match="slot id"):
        session.fork_slot_sync("no spaces please")
    with pytest.raises(SlotNotFoundError):
        session.fork_slot_sync("c", from_slot="ghost")
    assert set(session.slots) == {"main", "a", "b"}


def test_unknown_slot_error_names_the_existing_slots() -> None:
    session = _echo_session()
    session.fork_slot_sync("side")
    with pytest.raises(SlotNotFoundError) as info:
        session.switch_slot_sync("ghost")
    assert "slots: main, side" in str(info.value)
    assert info.value.context == {"session_id": session.session_id, "slot_id": "ghost"}
    assert isinstance(info.value, KeyError)
    with pytest.raises(SlotNotFoundError):
        session.merge_slot_sync("ghost")
    with pytest.raises(SlotNotFoundError):
        session.merge_slot_sync("side", into="ghost")
    assert session.current_slot_id == "main"


def test_merging_a_slot_into_itself_is_an_error() -> None:
    session = _echo_session()
    session.fork_slot_sync("side")
    with pytest.raises(InvalidInputError, match="into itself"):
        session.merge_slot_sync("side", into="side")
    with pytest.raises(InvalidInputError, match="into itself"):
        session.merge_slot_sync("main")  # no parent: the target would be main itself
    slot = ContextSlot("x")
    with pytest.raises(InvalidInputError, match="into itself"):
        slot.merge(slot)


def test_append_brings_the_messages_after_the_fork_point() -> None:
    session = _echo_session()
    session.submit_turn_sync("shared")
    session.fork_slot_sync("side", switch=True)
    session.submit_turn_sync("idea")
    session.switch_slot_sync("main")
    session.submit_turn_sync("meanwhile")
    target = session.merge_slot_sync("side", strategy=MergeStrategy.Append)
    assert target is session.slots["main"]
    assert _texts(target.messages) == [
        "shared",
        "re: shared",
        "meanwhile",
        "re: meanwhile",
        "idea",
        "re: idea",
    ]
    side = session.slots["side"]
    assert target.messages[-1] is side.messages[-1]  # the same message, not a copy
    assert side.merge_base == 4


def test_merging_twice_only_appends_the_new_messages() -> None:
    session = _echo_session()
    session.fork_slot_sync("side", switch=True)
    session.submit_turn_sync("first")
    session.merge_slot_sync("side", strategy="append")
    session.merge_slot_sync("side")  # nothing new: nothing appended
    assert _texts(session.slots["main"].messages) == ["first", "re: first"]
    session.submit_turn_sync("second")  # still on side
    session.merge_slot_sync("side")
    assert _texts(session.slots["main"].messages) == ["first", "re: first", "second", "re: second"]


def test_replace_puts_the_childs_history_in_place_of_the_targets() -> None:
    session = _echo_session()
    session.submit_turn_sync("keep")
    session.fork_slot_sync("side", switch=True)
    session.submit_turn_sync("better")
    session.switch_slot_sync("main")
    session.submit_turn_sync("dropped")
    target = session.merge_slot_sync("side", strategy=MergeStrategy.Replace)
    assert _texts(target.messages) == ["keep", "re: keep", "better", "re: better"]
    assert target.head_node_id == session.slots["side"].head_node_id
    assert session.submit_turn_sync("after").messages[0] is session.messages[-2]


def test_summarize_condenses_the_childs_new_messages_into_one() -> None:
    seen: list[Sequence[Message]] = []

    def script(messages: Sequence[Message]) -> str:
        if isinstance(messages[0], SystemMessage) and "side branch" in messages[0].text:
            seen.append(messages)
            return "tried X, found Y"
        return f"re: {messages[-1].text}"

    session = AgentSession(Agent(name="a", model=ScriptedModel(script)))
    session.submit_turn_sync("before the fork")
    session.fork_slot_sync("side", switch=True)
    session.submit_turn_sync("explore X")
    before = len(session.slots["main"].messages)
    target = session.merge_slot_sync("side", strategy=MergeStrategy.Summarize)
    assert len(target.messages) == before + 1
    summary = target.messages[-1]
    assert isinstance(summary, AssistantMessage)
    assert summary.text == "[Summary of slot 'side'] tried X, found Y"
    assert summary.metadata == {"merged_from": "side", "strategy": "summarize"}
    (request,) = seen
    assert "explore X" in request[-1].text and "before the fork" not in request[-1].text


def test_summarize_merge_uses_the_summary_model_when_configured() -> None:
    summarizer = ScriptedModel(["condensed"])
    agent = Agent(
        name="a",
        model=ScriptedModel(lambda m: "main model"),
        summary_config=SummaryConfig(summary_model=summarizer),
    )
    session = AgentSession(agent)
    session.fork_slot_sync("side", switch=True)
    session.submit_turn_sync("work")
    target = session.merge_slot_sync("side", strategy="summarize")
    assert target.messages[-1].text == "[Summary of slot 'side'] condensed"
    assert summarizer.calls == 1


def test_merge_preview_describes_without_changing() -> None:
    session = _echo_session()
    session.submit_turn_sync("a")
    session.fork_slot_sync("side", switch=True)
    session.submit_turn_sync("b")
    main_before = list(session.slots["main"].messages)
    append = session.merge_preview("side")
    assert (append.before, append.after, len(append.incoming)) == (2, 4, 2)
    assert (
        append.describe()
        == "This will append 2 message(s) from 'side' to 'main' (2 -> 4 messages)."
    )
    replace = session.merge_preview("side", strategy="replace")
    assert (replace.before, replace.after) == (2, 4)
    summarize = session.merge_preview("side", strategy=MergeStrategy.Summarize)
    assert summarize.after == 3 and "condense 2 message(s)" in summarize.describe()
    assert session.slots["main"].messages == main_before
    assert session.slots["side"].merge_base == 2


def test_slot_operations_are_persisted_and_reloaded() -> None:
    store = SqliteStore(":memory:")
    session = _echo_session(store)
    session.submit_turn_sync("one")
    session.fork_slot_sync("side", switch=True)
    session.submit_turn_sync("two")
    session.merge_slot_sync("side")
    session.fork_slot_sync("other")
    session.switch_slot_sync("main")

    again = AgentSession.load(session.session_id, session.agent, store=store)
    assert again.current_slot_id == "main"
    assert list(again.slots) == ["main", "side", "other"]
    for slot_id, slot in session.slots.items():
        loaded = again.slots[slot_id]
        assert loaded.messages == slot.messages
        assert (loaded.parent_slot_id, loaded.fork_point, loaded.merge_base) == (
            slot.parent_slot_id,
            slot.fork_point,
            slot.merge_base,
        )
    # The merge base survived: merging again appends nothing.
    again.merge_slot_sync("side")
    assert again.slots["main"].messages == session.slots["main"].messages


def test_merge_strategies_on_slots_directly() -> None:
    q, a = UserMessage(content="q"), AssistantMessage(content="a")
    parent = ContextSlot("main")
    parent.extend([q, a])
    child = parent.fork("side")
    extra = UserMessage(content="extra")
    links = child.extend([extra])
    assert links[0].parent_node_id == parent.head_node_id and links[0].depth == 2

    appended = parent.copy()
    new_links = appended.merge(child.copy(), "append")
    assert appended.messages == [q, a, extra]
    assert [link.message_id for link in new_links] == [extra.id]

    replaced = parent.copy()
    assert replaced.merge(child.copy(), MergeStrategy.Replace) == []  # nothing new to store
    assert replaced.messages == child.messages and replaced.head_node_id == child.head_node_id

    with pytest.raises(InvalidInputError, match="needs the summary message"):
        parent.copy().merge(child.copy(), MergeStrategy.Summarize)
    with pytest.raises(ValueError):
        parent.copy().merge(child.copy(), "rebase")


def _conversation() -> list[Message]:
    call = ToolCall(id="c1", name="add", arguments={"a": 1, "b": 2})
    return [
        UserMessage(content="u1"),  # 0
        AssistantMessage(content="a1"),  # 1
        UserMessage(content="u2"),  # 2
        AssistantMessage(content=None, tool_calls=(call,)),  # 3
        ToolMessage(content="3", tool_call_id="c1", name="add"),  # 4
        AssistantMessage(content="a2"),  # 5
    ]


def test_full_mode_sends_the_system_prompt_and_every_message() -> None:
    slot = ContextSlot("main", messages=_conversation())
    context = build_context(slot, "sys")
    assert context[0] == SystemMessage(
        content="sys", id=context[0].id, created_at=context[0].created_at
    )
    assert context[1:] == slot.messages
    assert build_context(slot) == slot.messages  # no system prompt, no system message


def test_focused_mode_sends_system_summary_pinned_and_window() -> None:
    messages = _conversation()
    slot = ContextSlot(
        "main",
        messages=messages,
        mode=SlotMode.Focused,
        summary_override="the user asked twice",
        pinned_ids=[messages[0].id, messages[5].id],
        recent_window=1,
    )
    context = build_context(slot, "sys")
    assert [m.role for m in context[:2]] == ["system", "system"]
    assert context[0].text == "sys"
    assert context[1].text == SUMMARY_HEADER + "the user asked twice"
    # Pinned messages older than the window, then the window; nothing twice.
    assert context[2:] == [messages[0], messages[5]]


def test_a_focused_window_never_starts_with_a_tool_message() -> None:
    messages = _conversation()
    slot = ContextSlot("main", messages=messages, mode=SlotMode.Focused, recent_window=2)
    context = build_context(slot)
    # A window of 2 would start at the tool result; it widens to its assistant tool call.
    assert context == messages[3:]
    assert not isinstance(context[0], ToolMessage)
    no_summary = [m for m in context if isinstance(m, SystemMessage)]
    assert no_summary == []


@pytest.mark.parametrize("window", [1, 2, 3, 4, 5, 6, 10])
def test_every_focused_window_keeps_tool_results_with_their_call(window: int) -> None:
    slot = ContextSlot(
        "main", messages=_conversation(), mode=SlotMode.Focused, recent_window=window
    )
    context = build_context(slot)
    calls = {c.id for m in context if isinstance(m, AssistantMessage) for c in m.tool_calls}
    for message in context:
        if isinstance(message, ToolMessage):
            assert message.tool_call_id in calls


def test_slot_ids_and_windows_are_validated() -> None:
    with pytest.raises(InvalidInputError):
        ContextSlot("bad id")
    with pytest.raises(InvalidInputError):
        ContextSlot("x" * 65)
    with pytest.raises(InvalidInputError, match="recent_window"):
        ContextSlot("ok", recent_window=0)


def test_fork_remembers_the_merge_strategy_and_merge_uses_it(tmp_path: object) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "lab.db"
    session = _echo_session(SqliteStore(path))
    session.submit_turn_sync("keep")
    side = session.fork_slot_sync("side", switch=True, strategy="replace")
    assert side.merge_strategy is MergeStrategy.Replace
    session.submit_turn_sync("better")
    session.switch_slot_sync("main")
    session.submit_turn_sync("dropped")
    # Stored with the slot: a reloaded session still knows it.
    again = AgentSession.load(session.session_id, session.agent, store=SqliteStore(path))
    assert again.slots["side"].merge_strategy is MergeStrategy.Replace
    assert again.merge_preview("side").strategy is MergeStrategy.Replace
    target = again.merge_slot_sync("side")  # no strategy given: the remembered one
    assert _texts(target.messages) == ["keep", "re: keep", "better", "re: better"]


def test_a_strategy_given_at_merge_overrides_the_remembered_one() -> None:
    session = _echo_session()
    session.submit_turn_sync("keep")
    session.fork_slot_sync("side", switch=True, strategy=MergeStrategy.Replace)
    session.submit_turn_sync("more")
    session.switch_slot_sync("main")
    session.submit_turn_sync("also kept")
    target = session.merge_slot_sync("side", strategy="append")
    assert _texts(target.messages) == [
        "keep",
        "re: keep",
        "also kept",
        "re: also kept",
        "more",
        "re: more",
    ]
    plain = session.fork_slot_sync("plain")  # no strategy: Append, as before
    assert plain.merge_strategy is None and plain.resolve_strategy() is MergeStrategy.Append


def test_unknown_strategies_raise_invalid_input_and_change_nothing() -> None:
    session = _echo_session()
    session.submit_turn_sync("hi")
    version = session.version
    with pytest.raises(InvalidInputError, match="unknown merge strategy 'rebase'"):
        session.fork_slot_sync("side", strategy="rebase")
    assert set(session.slots) == {"main"} and session.version == version
    session.fork_slot_sync("side")
    for bad in (
        lambda: session.merge_slot_sync("side", strategy="rebase"),
        lambda: session.merge_preview("side", strategy="squash"),
        lambda: session.slots["main"].copy().merge(session.slots["side"].copy(), "rebase"),
        lambda: ContextSlot("x").fork("y", strategy="octopus"),
    ):
        with pytest.raises(InvalidInputError, match="unknown merge strategy"):
            bad()


def test_a_slot_record_is_what_a_validation_of_its_fields_gives() -> None:
    # to_record builds the record without a validation pass: it must hold exactly what a
    # validated record of the same fields holds (types included), and store and load alike.
    from agcore_lab.store.base import SessionRecord, SlotRecord

    slot = ContextSlot(
        "side",
        mode=SlotMode.Focused,
        pinned_ids=["m1"],
        recent_window=4,
        parent_slot_id="main",
        fork_point=2,
        merge_strategy=MergeStrategy.Replace,
    )
    record = slot.to_record("ses_x")
    checked = SlotRecord.model_validate(record.model_dump())
    assert record == checked and record.model_fields_set == checked.model_fields_set
    assert type(record.mode) is SlotMode and record.merge_strategy == "replace"
    assert record.pinned_ids == ["m1"] and record.pinned_ids is not slot.pinned_ids
    store = SqliteStore(":memory:")
    store.create_session(SessionRecord(session_id="ses_x", agent_name="a"), slots=[record])
    (stored,) = store.load_slots("ses_x")
    assert stored == record

"""diff_slots: fork-point alignment, row kinds, word diffs, DataFrame, session method."""

from __future__ import annotations

import pytest

from agcore_lab import Agent, AgentSession, ScriptedModel, SlotNotFoundError
from agcore_lab.agent.slot_diff import (
    MAX_WORD_DIFF_TOKENS,
    common_prefix,
    diff_slots,
    tool_call_lines,
    word_diff,
)
from agcore_lab.agent.slots import ContextSlot
from agcore_lab.llm.messages import AssistantMessage, Message, ToolCall, ToolMessage, UserMessage


def _user(text: str) -> UserMessage:
    return UserMessage(content=text)


def _bot(text: str | None = None, *calls: ToolCall) -> AssistantMessage:
    return AssistantMessage(content=text, tool_calls=calls)


def _forked(
    prefix: list[Message], left_tail: list[Message], right_tail: list[Message]
) -> tuple[ContextSlot, ContextSlot]:
    main = ContextSlot("main", list(prefix))
    alt = main.fork("alt")
    main.extend(left_tail)
    alt.extend(right_tail)
    return main, alt


def _joined(segments: tuple[tuple[str, str], ...]) -> str:
    return "".join(text for _, text in segments)


def test_identical_fork_is_all_shared() -> None:
    main, alt = _forked([_user("a"), _bot("b")], [], [])
    diff = diff_slots(main, alt)
    assert diff.fork_index == 2
    assert [row.kind for row in diff.rows] == ["shared", "shared"]
    assert [(row.left_index, row.right_index) for row in diff.rows] == [(0, 0), (1, 1)]
    assert diff.rows[0].left is diff.rows[0].right
    assert diff.identical
    assert diff.tail == ()
    assert diff.counts == {"shared": 2, "equal": 0, "changed": 0, "left_only": 0, "right_only": 0}


def test_added_turn_on_one_side_is_right_only() -> None:
    added = [_user("question?"), _bot("answer.")]
    main, alt = _forked([_user("hi"), _bot("hello")], [], added)
    diff = diff_slots(main, alt)
    assert diff.fork_index == 2
    assert [row.kind for row in diff.tail] == ["right_only", "right_only"]
    assert [row.right for row in diff.tail] == added
    assert [row.right_index for row in diff.tail] == [2, 3]
    assert all(row.left is None and row.left_index is None for row in diff.tail)
    assert diff.counts["right_only"] == 2
    assert not diff.identical


def test_swapping_sides_swaps_left_only_and_right_only() -> None:
    main, alt = _forked([_user("hi")], [_bot("mine")], [])
    assert [row.kind for row in diff_slots(main, alt).tail] == ["left_only"]
    assert [row.kind for row in diff_slots(alt, main).tail] == ["right_only"]


def test_changed_pair_has_word_level_segments() -> None:
    main, alt = _forked(
        [_user("hi")],
        [_user("what is the capital of France?"), _bot("Paris is the capital.")],
        [_user("what is the capital of Italy?"), _bot("Rome is the capital.")],
    )
    diff = diff_slots(main, alt)
    assert [row.kind for row in diff.tail] == ["changed", "changed"]
    first = diff.tail[0]
    assert first.left_segments == (
        ("equal", "what is the capital of "),
        ("delete", "France?"),
    )
    assert first.right_segments == (
        ("equal", "what is the capital of "),
        ("insert", "Italy?"),
    )
    assert (first.left_index, first.right_index) == (1, 1)
    assert diff.counts["changed"] == 2


def test_equal_content_after_fork_is_equal_not_shared() -> None:
    # Same text but new message objects (different ids): equal rows after the prefix.
    main, alt = _forked([_user("hi")], [_user("same"), _bot("one")], [_user("same"), _bot("two")])
    diff = diff_slots(main, alt)
    assert diff.fork_index == 1
    assert [row.kind for row in diff.tail] == ["equal", "changed"]
    assert diff.tail[0].left is not diff.tail[0].right


def test_replace_block_pairs_one_to_one_and_rest_is_added() -> None:
    main, alt = _forked(
        [_user("hi")],
        [_bot("alpha one")],
        [_bot("alpha two"), _bot("beta"), _bot("gamma")],
    )
    kinds = [row.kind for row in diff_slots(main, alt).tail]
    assert kinds == ["changed", "right_only", "right_only"]
    kinds = [row.kind for row in diff_slots(alt, main).tail]
    assert kinds == ["changed", "left_only", "left_only"]


def test_alignment_finds_common_messages_after_the_fork() -> None:
    common = [_user("shared later"), _bot("ok")]
    main, alt = _forked(
        [_user("hi")],
        [_bot("left extra"), *common],
        [*common, _bot("right extra")],
    )
    diff = diff_slots(main, alt)
    tail = [(row.kind, row.left_index, row.right_index) for row in diff.tail]
    assert tail == [
        ("left_only", 1, None),
        ("equal", 2, 1),
        ("equal", 3, 2),
        ("right_only", None, 3),
    ]


def test_unrelated_slots_have_no_prefix() -> None:
    left = ContextSlot("a", [_user("x")])
    right = ContextSlot("b", [_user("y")])
    diff = diff_slots(left, right)
    assert diff.fork_index == 0
    assert [row.kind for row in diff.rows] == ["changed"]
    assert diff.left_slot_id == "a" and diff.right_slot_id == "b"


def test_empty_slots() -> None:
    diff = diff_slots(ContextSlot("a"), ContextSlot("b"))
    assert diff.rows == () and diff.fork_index == 0 and diff.identical


def test_prefix_stops_at_first_different_id() -> None:
    a, b, c = _user("a"), _user("b"), _user("c")
    assert common_prefix([a, b, c], [a, b]) == 2
    assert common_prefix([a, c], [a, b]) == 1
    assert common_prefix([], [a]) == 0


def test_tool_calls_are_part_of_the_key_but_ids_are_not() -> None:
    call_a = ToolCall(name="search", arguments={"q": "cats"}, id="call_0001")
    call_b = ToolCall(name="search", arguments={"q": "cats"}, id="call_0009")
    call_c = ToolCall(name="search", arguments={"q": "dogs"}, id="call_0002")
    main, alt = _forked([_user("hi")], [_bot(None, call_a)], [_bot(None, call_b)])
    assert [row.kind for row in diff_slots(main, alt).tail] == ["equal"]
    main, alt = _forked([_user("hi")], [_bot(None, call_a)], [_bot(None, call_c)])
    row = diff_slots(main, alt).tail[0]
    assert row.kind == "changed"
    assert row.tool_calls_changed
    assert tool_call_lines(row.right) == ('search({"q": "dogs"})',)  # type: ignore[arg-type]


def test_tool_messages_are_compared_by_role_and_text() -> None:
    result_a = ToolMessage(content="42", tool_call_id="call_1")
    result_b = ToolMessage(content="42", tool_call_id="call_7")
    main, alt = _forked([_user("hi")], [result_a], [result_b])
    assert [row.kind for row in diff_slots(main, alt).tail] == ["equal"]
    assert tool_call_lines(result_a) == ()


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("a b c", "a x c"),
        ("line one\n\nline  two", "line one\nline three  two\t!"),
        ("", "all new"),
        ("all gone", ""),
        ("  leading and trailing  ", "leading, trailing\n"),
        ("日本語 テキスト", "日本語 の テキスト"),
    ],
)
def test_word_diff_keeps_every_character(left: str, right: str) -> None:
    left_segments, right_segments = word_diff(left, right)
    assert _joined(left_segments) == left
    assert _joined(right_segments) == right
    assert {op for op, _ in left_segments} <= {"equal", "delete"}
    assert {op for op, _ in right_segments} <= {"equal", "insert"}
    # What both sides keep is the same text.
    kept_left = "".join(text for op, text in left_segments if op == "equal")
    kept_right = "".join(text for op, text in right_segments if op == "equal")
    assert kept_left == kept_right
    # Adjacent segments never share an op (they are merged).
    for segments in (left_segments, right_segments):
        assert all(x[0] != y[0] for x, y in zip(segments, segments[1:], strict=False))


def test_word_diff_of_huge_texts_falls_back_to_whole_replacement() -> None:
    left = "word " * MAX_WORD_DIFF_TOKENS
    right = left + "extra"
    assert word_diff(left, right) == ((("delete", left),), (("insert", right),))
    assert word_diff(left, left) == ((("equal", left),), (("equal", left),))


def test_to_dataframe_has_one_row_per_diff_row() -> None:
    main, alt = _forked([_user("hi")], [_bot("left")], [_bot("right"), _user("more")])
    diff = diff_slots(main, alt)
    frame = diff.to_dataframe()
    assert list(frame["kind"]) == ["shared", "changed", "right_only"]
    assert list(frame["left_text"])[:2] == ["hi", "left"]
    assert frame["left_text"].isna().tolist() == [False, False, True]
    assert list(frame["right_index"]) == [0, 1, 2]
    assert str(frame["left_index"].dtype) == "Int64"
    assert frame.loc[2, "right_role"] == "user"
    assert list(frame.columns) == [
        "kind",
        "left_index",
        "right_index",
        "left_role",
        "right_role",
        "left_text",
        "right_text",
        "left_id",
        "right_id",
    ]


def test_summary_and_repr_name_the_slots() -> None:
    main, alt = _forked([_user("hi")], [], [_bot("x")])
    diff = diff_slots(main, alt)
    expected = "'main' vs 'alt': 1 shared, 0 equal, 0 changed, 0 only left, 1 only right"
    assert diff.summary() == expected
    assert "SlotDiff(" in repr(diff)


def test_session_diff_slots_follows_fork_turn_and_merge() -> None:
    session = AgentSession(Agent(name="t", model=ScriptedModel(["hello", "forked answer"])))
    session.submit_turn_sync("hi")
    session.fork_slot_sync("alt", switch=True)
    session.submit_turn_sync("go on")
    diff = session.diff_slots("main", "alt")
    assert diff.fork_index == 2
    assert [row.kind for row in diff.tail] == ["right_only", "right_only"]
    assert diff.tail[1].right is not None and diff.tail[1].right.text == "forked answer"
    session.merge_slot_sync("alt", into="main")
    after = session.diff_slots("main", "alt")
    assert after.fork_index == 4 and after.identical


def test_session_diff_slots_unknown_slot() -> None:
    session = AgentSession(Agent(name="t", model=ScriptedModel()))
    with pytest.raises(SlotNotFoundError, match="nope"):
        session.diff_slots("main", "nope")
    with pytest.raises(SlotNotFoundError):
        session.diff_slots("nope", "main")

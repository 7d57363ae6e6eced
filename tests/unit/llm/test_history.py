"""MessageHistory: compact columns that read back as the messages stored, behaving as a list
(issue 16: a loaded session retains at most twice its content in RAM)."""

from __future__ import annotations

import copy
import gc
import pickle
import tracemalloc
import weakref
from datetime import UTC, datetime, timedelta, timezone

import pytest

from agcore_lab.llm.history import MessageHistory
from agcore_lab.llm.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from agcore_lab.llm.tokens import estimate_messages_tokens
from agcore_lab.store._trusted import trusted

STORED = {"id", "role", "content", "created_at"}


def stored(kind: type[Message], content: str | None, i: int) -> Message:
    """A message as the store's rows give it (built without validation from its columns)."""
    created = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(microseconds=i * 1_000_003)
    role = kind.model_fields["role"].default
    fields = {"id": f"msg_{i:017d}", "role": role, "content": content, "created_at": created}
    return trusted(kind, fields, STORED)


def mixed() -> list[Message]:
    return [
        stored(SystemMessage, "be brief", 0),
        stored(UserMessage, "hello", 1),
        stored(AssistantMessage, "hi there", 2),
        stored(AssistantMessage, None, 3),
        AssistantMessage(content=None, tool_calls=(ToolCall(name="add", arguments={"a": 1}),)),
        ToolMessage(content="1", tool_call_id="call_1", name="add"),
        UserMessage(content="named", name="ann"),
        UserMessage(content="with metadata", metadata={"k": "v"}),
        UserMessage(id="short", content="an id of another length"),
        UserMessage(content="not UTC", created_at=datetime(2026, 1, 1, tzinfo=timezone.max)),
        stored(UserMessage, "é ünïcode ✓", 10),
        UserMessage(content="validated, all fields set"),
        stored(UserMessage, "an empty id", 12).model_copy(update={"id": ""}),
    ]


def test_messages_read_back_equal_to_the_given_ones() -> None:
    given = mixed()
    history = MessageHistory.compact(given)
    assert len(history) == len(given)
    for read, original in zip(history, given, strict=True):
        assert type(read) is type(original)
        assert read == original
        assert read.model_dump() == original.model_dump()
        assert read.model_dump(exclude_unset=True) == original.model_dump(exclude_unset=True)
        assert read.model_fields_set == original.model_fields_set
    assert history == given and given == history


def test_only_plain_messages_go_to_the_columns_the_rest_stay_as_given() -> None:
    given = mixed()
    history = MessageHistory.compact(given)
    assert all(history[i] is m for i, m in enumerate(given))  # the given ones, while alive
    refs = [weakref.ref(m) for m in given]
    del given
    gc.collect()
    kept = [i for i, ref in enumerate(refs) if ref() is not None]
    # tool calls, a tool result, a name, metadata, another id length, another time zone, a
    # message with all fields set and an empty id stay objects; plain rows go to the columns.
    assert kept == [4, 5, 6, 7, 8, 9, 11, 12]
    assert [m.text for m in history][:3] == ["be brief", "hello", "hi there"]


def test_a_read_message_is_the_same_object_while_it_is_alive() -> None:
    history = MessageHistory.compact([stored(UserMessage, "a", 0), stored(UserMessage, "b", 1)])
    first = history[0]
    assert history[0] is first
    assert next(iter(history)) is first
    assert history[-2] is first
    assert history[:1][0] is first
    copy = history.prefix(1)
    assert copy[0] is first  # a prefix shares the columns and their live messages
    gone = weakref.ref(first)
    del first, copy
    gc.collect()
    assert gone() is None  # the history does not keep what it built alive
    again = history[0]
    assert again.content == "a" and again.id == "msg_00000000000000000"


def test_a_history_behaves_as_a_list() -> None:
    given = [stored(UserMessage, str(i), i) for i in range(5)]
    history = MessageHistory.compact(given)
    extra = UserMessage(content="appended")
    history.append(extra)
    history.extend([UserMessage(content="x")])
    assert len(history) == 7 and bool(history) and not MessageHistory()
    assert history[5] is extra and history[-2] is extra
    assert history[1:3] == given[1:3] and isinstance(history[1:3], list)
    assert history[::2] == [*given[::2], history[6]]
    assert history[10:] == []
    assert [m.text for m in history] == ["0", "1", "2", "3", "4", "appended", "x"]
    assert [*given, extra] + [] == history[:6] + []
    assert history + [extra] == [*history, extra]
    assert [extra] + history == [extra, *history]
    assert extra in history and history.index(extra) == 5
    with pytest.raises(IndexError):
        history[7]
    with pytest.raises(IndexError):
        history[-8]
    assert history != [*history][:-1]
    assert (history == 3) is False
    assert [history.message_id(i) for i in range(-7, 7)] == [m.id for m in [*history, *history]]


def test_objects_are_every_message_not_in_the_columns_in_order() -> None:
    given = mixed()
    history = MessageHistory.compact(given)
    extra = UserMessage(content="appended")
    history.append(extra)
    assert list(history.objects()) == [*(given[i] for i in (4, 5, 6, 7, 8, 9, 11, 12)), extra]
    assert list(history.prefix(6).objects()) == [given[4], given[5]]
    calls = [
        m
        for m in history
        if isinstance(m, ToolMessage | AssistantMessage)
        and (isinstance(m, ToolMessage) or m.tool_calls)
    ]
    assert all(any(m is o for o in history.objects()) for m in calls)


def test_a_plain_list_given_is_kept_and_appends_reach_it() -> None:
    given: list[Message] = [UserMessage(content="a")]
    history = MessageHistory(given)
    history.append(UserMessage(content="b"))
    assert len(given) == 2 and history == given


def test_prefix_and_copy_are_independent_histories_sharing_the_columns() -> None:
    history = MessageHistory.compact([stored(UserMessage, str(i), i) for i in range(4)])
    history.append(UserMessage(content="tail"))
    short = history.prefix(2)
    longer = history.prefix(5)
    copy = history.copy()
    assert [m.text for m in short] == ["0", "1"]
    assert longer == history and copy == history
    short.append(UserMessage(content="other"))
    copy.append(UserMessage(content="copied"))
    assert len(history) == 5 and [m.text for m in history][-1] == "tail"
    assert [m.text for m in short] == ["0", "1", "other"]
    assert len(history.prefix(-1)) == 0 and history.prefix(99) == history


def test_copies_and_pickles_hold_the_same_messages() -> None:
    history = MessageHistory.compact([stored(UserMessage, str(i), i) for i in range(3)])
    history.append(UserMessage(content="tail"))
    for other in (copy.copy(history), copy.deepcopy(history), pickle.loads(pickle.dumps(history))):
        assert isinstance(other, MessageHistory) and other == history
        other.append(UserMessage(content="only in the copy"))
        assert len(history) == 4


def test_the_token_estimate_equals_the_estimate_of_the_messages() -> None:
    history = MessageHistory.compact(mixed())
    history.append(UserMessage(content="one more message"))
    expected = estimate_messages_tokens(list(history))
    assert estimate_messages_tokens(history) == expected
    assert history.estimate_tokens() == expected
    assert estimate_messages_tokens(history.prefix(3)) == estimate_messages_tokens(history[:3])


def _retained(build: object) -> tuple[object, int]:
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    kept = build() if callable(build) else build
    gc.collect()
    retained = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    return kept, retained


def test_a_compact_history_keeps_at_most_twice_its_text() -> None:
    # The benchmark's shape: a 75-character question and a 300-character reply per turn.
    def build() -> MessageHistory:
        messages = []
        for i in range(2_000):
            messages.append(stored(UserMessage, f"{i:04d}" + "q" * 71, 2 * i))
            messages.append(stored(AssistantMessage, f"{i:04d}" + "r" * 296, 2 * i + 1))
        return MessageHistory.compact(messages)

    history, retained = _retained(build)
    assert isinstance(history, MessageHistory)
    content = sum(len(m.text.encode()) for m in history)
    assert content == 2_000 * 375
    assert retained <= 2 * content, f"{retained / content:.2f}x the content"

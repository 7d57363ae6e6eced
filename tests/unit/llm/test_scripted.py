"""``ScriptedModel``: the deterministic offline model."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from typing import Any

import pytest

from agcore_lab.errors import InvalidInputError
from agcore_lab.llm.base import ChatModel, ResponseDone, TextDelta, ToolCallDelta, ToolSpec
from agcore_lab.llm.messages import AssistantMessage, Message, ToolCall, UserMessage
from agcore_lab.llm.scripted import FALLBACK_PREFIX, ScriptedModel
from agcore_lab.llm.tokens import MESSAGE_OVERHEAD, estimate_messages_tokens, estimate_tokens

HI: list[Message] = [UserMessage(content="hi")]


def _reply(model: ScriptedModel, messages: Sequence[Message] = HI) -> AssistantMessage:
    return asyncio.run(model.complete(messages)).message


def _stream(model: ScriptedModel, messages: Sequence[Message] = HI) -> list[Any]:
    async def collect() -> list[Any]:
        return [event async for event in model.stream(messages)]

    return asyncio.run(collect())


def test_it_is_a_chat_model() -> None:
    assert isinstance(ScriptedModel(), ChatModel)
    assert ScriptedModel().model_name == "scripted"
    assert ScriptedModel(model_name="gpt-4o").model_name == "gpt-4o"


def test_script_items_of_every_kind_are_used_in_order() -> None:
    def echo(messages: Sequence[Message]) -> str:
        return f"you said {messages[-1].text}"

    model = ScriptedModel(
        [
            "plain",
            ToolCall(name="add", arguments={"a": 1}),
            [ToolCall(name="a"), ToolCall(name="b", id="mine")],
            AssistantMessage(content="as is", tool_calls=(ToolCall(name="c"),)),
            echo,
            lambda messages: ToolCall(name="from_callable"),
        ]
    )
    assert _reply(model).content == "plain"
    single = _reply(model)
    assert single.content is None
    assert single.tool_calls == (ToolCall(name="add", arguments={"a": 1}, id="call_0001"),)
    assert [c.id for c in _reply(model).tool_calls] == ["call_0002", "mine"]
    as_is = _reply(model)
    assert as_is.content == "as is" and as_is.tool_calls[0].id == "call_0003"
    assert _reply(model, [UserMessage(content="ping")]).content == "you said ping"
    assert _reply(model).tool_calls[0].name == "from_callable"
    assert model.remaining == 0 and model.calls == 6


def test_a_function_script_answers_every_call() -> None:
    model = ScriptedModel(lambda messages: f"{len(messages)} messages")
    assert _reply(model).content == "1 messages"
    assert _reply(model, HI * 3).content == "3 messages"
    assert model.remaining == 0


def test_fallback_reply_repeats_the_last_user_message_cut_to_200_chars() -> None:
    model = ScriptedModel(["only"])
    assert _reply(model).content == "only"
    long = "x" * 150 + "y" * 100
    messages: list[Message] = [
        UserMessage(content="earlier"),
        UserMessage(content=long),
        AssistantMessage(content="not this"),
    ]
    assert _reply(model, messages).content == "[scripted] " + long[:200]
    assert FALLBACK_PREFIX == "[scripted] "
    assert _reply(ScriptedModel(), []).content == "[scripted] "


def test_usage_is_estimated_with_cjk_per_character() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2
    assert estimate_tokens("你好世界") == 4  # one token per CJK character
    assert estimate_tokens("こんにちは") == 5 and estimate_tokens("안녕") == 2
    assert estimate_tokens("你好abcd") == 3

    response = asyncio.run(ScriptedModel(["你好世界"]).complete([UserMessage(content="你好")]))
    assert response.usage.prompt_tokens == MESSAGE_OVERHEAD + 2
    assert response.usage.completion_tokens == MESSAGE_OVERHEAD + 4
    assert response.usage.requests == 1
    assert response.finish_reason == "stop"


def test_tools_count_towards_prompt_tokens() -> None:
    spec = ToolSpec(name="add", description="Add.", parameters={"type": "object"})
    bare = asyncio.run(ScriptedModel(["x"]).complete(HI))
    with_tools = asyncio.run(ScriptedModel(["x"]).complete(HI, tools=[spec]))
    assert with_tools.usage.prompt_tokens > bare.usage.prompt_tokens


def test_streaming_reassembles_to_the_same_text() -> None:
    text = "The quick brown fox jumps over the lazy dog; 敏捷的棕色狐狸."
    events = _stream(ScriptedModel([text], chunk_size=5))
    deltas = [e for e in events if isinstance(e, TextDelta)]
    assert len(deltas) == -(-len(text) // 5)
    assert all(len(d.text) <= 5 for d in deltas)
    assert "".join(d.text for d in deltas) == text
    assert isinstance(events[-1], ResponseDone)
    assert events[-1].response.message.content == text
    assert sum(isinstance(e, ResponseDone) for e in events) == 1


def test_streaming_tool_calls_reassemble_to_the_same_arguments() -> None:
    calls = [
        ToolCall(name="add", arguments={"a": 2, "b": 3}),
        ToolCall(name="search", arguments={"query": "long enough to need chunks", "k": [1, 2]}),
    ]
    events = _stream(ScriptedModel([calls], chunk_size=4))
    deltas = [e for e in events if isinstance(e, ToolCallDelta)]
    assembled: dict[int, dict[str, Any]] = {}
    for delta in deltas:
        entry = assembled.setdefault(delta.index, {"id": None, "name": None, "arguments": ""})
        entry["id"] = delta.id or entry["id"]
        entry["name"] = delta.name or entry["name"]
        entry["arguments"] += delta.arguments
    assert [(e["id"], e["name"]) for e in assembled.values()] == [
        ("call_0001", "add"),
        ("call_0002", "search"),
    ]
    assert [json.loads(e["arguments"]) for e in assembled.values()] == [c.arguments for c in calls]
    done = events[-1]
    assert isinstance(done, ResponseDone)
    assert done.response.finish_reason == "tool_calls"
    assert [c.id for c in done.response.message.tool_calls] == ["call_0001", "call_0002"]


def test_latency_sleeps_on_complete_and_stream() -> None:
    model = ScriptedModel(["a", "b"], latency=0.05)
    start = time.perf_counter()
    _reply(model)
    assert time.perf_counter() - start >= 0.05
    start = time.perf_counter()
    _stream(model)
    assert time.perf_counter() - start >= 0.05


def test_latency_is_an_asyncio_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    # An asyncio sleep (not time.sleep) lets calls overlap: other tasks run meanwhile.
    slept: list[float] = []
    real_sleep = asyncio.sleep

    async def recording_sleep(delay: float) -> None:
        slept.append(delay)
        await real_sleep(0)

    monkeypatch.setattr(asyncio, "sleep", recording_sleep)
    model = ScriptedModel(lambda messages: "ok", latency=0.25)

    async def three() -> list[Any]:
        return await asyncio.gather(*(model.complete(HI) for _ in range(3)))

    assert len(asyncio.run(three())) == 3
    assert slept == [0.25, 0.25, 0.25]


def test_two_fresh_runs_are_identical() -> None:
    def script() -> list[Any]:
        return ["one", ToolCall(name="t", arguments={"x": 1}), [ToolCall(name="u")]]

    def run() -> list[tuple[Any, ...]]:
        model = ScriptedModel(script())
        out = []
        for text in ["a", "b", "c", "d"]:
            response = asyncio.run(model.complete([UserMessage(content=text)]))
            message = response.message
            out.append((message.content, message.tool_calls, response.usage))
        return out

    first = run()
    assert first == run()
    assert first[-1][0] == "[scripted] d"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"script": "oops"}, "not a string"),
        ({"latency": -1}, "latency"),
        ({"chunk_size": 0}, "chunk_size"),
    ],
)
def test_bad_configuration_is_rejected(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        ScriptedModel(**kwargs)


def test_a_bad_script_item_is_a_clear_error() -> None:
    with pytest.raises(InvalidInputError, match="script item"):
        _reply(ScriptedModel([42]))  # type: ignore[list-item]


def test_prompt_tokens_follow_the_conversation_whatever_came_before() -> None:
    # The model remembers the last conversation to estimate only what a new one adds; a
    # shorter one, a fork that left it, or another conversation is estimated whole, so every
    # count equals a fresh model's count.
    history = [UserMessage(content=f"message number {i} " * (i % 7 + 1)) for i in range(40)]
    fork = [*history[:20], *(UserMessage(content="forked off " * i) for i in range(1, 21))]
    other = [UserMessage(content="another session " * (i % 3 + 1)) for i in range(40)]
    sequences = [history[:10], history[:30], history[:30], history, history[:5], fork, history]
    sequences += [other, [*history, *fork], history[:1], []]
    model = ScriptedModel()
    for messages in sequences:
        got = asyncio.run(model.complete(messages)).usage.prompt_tokens
        fresh = asyncio.run(ScriptedModel().complete(messages)).usage.prompt_tokens
        assert got == fresh == estimate_messages_tokens(messages)


def test_prompt_tokens_after_going_back_to_an_earlier_conversation() -> None:
    # After a rollback a conversation extends an earlier one (not the last): the model finds
    # that one's count by its last messages, also when they were read back from a store as
    # new objects with the same ids; every count still equals a fresh model's count.
    history = [UserMessage(content=f"turn {i} " * (i % 5 + 1)) for i in range(60)]
    reread = [m.model_copy() for m in history]
    model = ScriptedModel()
    sequences = [history[: n + 1] for n in range(60)]  # the session grows one message a turn
    sequences += [
        [*history[:30], UserMessage(content="after a rollback")],
        [*reread[:45], UserMessage(content="after rolling forward again")],
        [*history[:29], UserMessage(content="one message before a known end")],
    ]
    for messages in sequences:
        got = asyncio.run(model.complete(messages)).usage.prompt_tokens
        assert got == estimate_messages_tokens(messages)


def test_a_message_edited_under_its_id_is_not_taken_for_the_original() -> None:
    # Probes tell messages apart by id first; the same id with other content is still a
    # different conversation, estimated afresh.
    history = [UserMessage(content=f"turn {i} " * (i % 4 + 1)) for i in range(12)]
    edited = [*history[:11], history[11].model_copy(update={"content": "much longer " * 40})]
    model = ScriptedModel()
    for messages in (history, edited, history):
        got = asyncio.run(model.complete(messages)).usage.prompt_tokens
        assert got == estimate_messages_tokens(messages)

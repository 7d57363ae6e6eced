"""Automatic summaries: watermark, debounce, Focused override, transcript limits."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import pytest

from agcore_lab import (
    Agent,
    AgentSession,
    AssistantMessage,
    Message,
    ScriptedModel,
    SlotMode,
    SummaryConfig,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from agcore_lab.agent.session import SUMMARY_KEY
from agcore_lab.agent.slots import SUMMARY_HEADER
from agcore_lab.agent.summary import (
    CUT_MARK,
    DEFAULT_SUMMARY_PROMPT,
    DEFAULT_SUMMARY_PROMPT_ZH,
    render_transcript,
)
from agcore_lab.errors import InvalidInputError, ModelError

LONG = "tell me about the history of the printing press in some detail please"  # ~18 tokens


class Summarizer(ScriptedModel):
    """A summary model that numbers its summaries and records what it was asked."""

    def __init__(self) -> None:
        super().__init__(self._answer, model_name="summarizer")
        self.requests: list[Sequence[Message]] = []

    def _answer(self, messages: Sequence[Message]) -> str:
        self.requests.append(messages)
        return f"summary {len(self.requests)}"


def _session(summarizer: Any = None, **config: Any) -> tuple[AgentSession, list[Sequence[Message]]]:
    seen: list[Sequence[Message]] = []

    def chat(messages: Sequence[Message]) -> str:
        seen.append(messages)
        return "ok"

    settings: dict[str, Any] = {
        "max_context_tokens": 40,
        "trigger_token_ratio": 0.5,
        "debounce_turns": 2,
        "summary_model": summarizer,
    }
    settings.update(config)
    agent = Agent(
        name="a",
        model=ScriptedModel(chat),
        summary_config=SummaryConfig(**settings),
    )
    return AgentSession(agent), seen


def test_defaults_match_the_spec() -> None:
    config = SummaryConfig()
    assert (config.trigger_token_ratio, config.max_context_tokens) == (0.75, 32_000)
    assert (config.debounce_turns, config.summary_model) == (3, None)
    assert (config.max_tool_result_chars, config.max_transcript_chars) == (500, 30_000)
    assert config.summary_prompt is None and config.language == "en"
    assert config.prompt == DEFAULT_SUMMARY_PROMPT
    assert config.watermark == 24_000


def test_is_due_needs_the_watermark_and_the_debounce() -> None:
    config = SummaryConfig(max_context_tokens=100, trigger_token_ratio=0.5, debounce_turns=3)
    assert not config.is_due(49, turn_index=1, last_summary_turn=None)
    assert config.is_due(50, turn_index=1, last_summary_turn=None)  # the first: always allowed
    assert not config.is_due(500, turn_index=6, last_summary_turn=4)
    assert config.is_due(500, turn_index=7, last_summary_turn=4)
    assert not config.is_due(10, turn_index=99, last_summary_turn=1)


@pytest.mark.parametrize(
    "bad",
    [{"trigger_token_ratio": 0}, {"trigger_token_ratio": 1.5}, {"max_context_tokens": 0}],
)
def test_bad_settings_are_rejected(bad: dict[str, Any]) -> None:
    with pytest.raises(InvalidInputError):
        SummaryConfig(**bad)


def test_no_summary_below_the_watermark() -> None:
    summarizer = Summarizer()
    session, _ = _session(summarizer, max_context_tokens=10_000)
    for _ in range(4):
        session.submit_turn_sync(LONG)
    assert summarizer.requests == []
    assert session.last_summary_turn is None and session.get_conversation_summary() is None
    assert session.current_slot.mode is SlotMode.Full


def test_first_summary_at_the_watermark_then_debounced() -> None:
    summarizer = Summarizer()
    session, _ = _session(summarizer)
    session.submit_turn_sync(LONG)  # past the watermark of 20 tokens: summary 1
    assert session.last_summary_turn == 1
    assert session.get_conversation_summary() == "summary 1"
    session.submit_turn_sync(LONG)  # one turn later: debounced
    assert len(summarizer.requests) == 1 and session.last_summary_turn == 1
    session.submit_turn_sync(LONG)  # two turns later: allowed again
    assert len(summarizer.requests) == 2 and session.last_summary_turn == 3
    assert session.get_conversation_summary() == "summary 2"
    # The second request builds on the first summary.
    assert "Previous summary: summary 1" in summarizer.requests[1][-1].text


def test_a_full_slot_stays_full_and_keeps_sending_the_whole_history() -> None:
    # The design's W5 fix: the summary goes to memory; a Full slot is not switched to Focused.
    summarizer = Summarizer()
    session, seen = _session(summarizer)
    session.submit_turn_sync(LONG)
    slot = session.current_slot
    assert slot.mode is SlotMode.Full and slot.summary_override is None
    entry = session.session_memory.get_entry(SUMMARY_KEY)
    assert entry is not None and entry.value == "summary 1"
    assert entry.metadata == {"turn_index": 1, "slot_id": "main", "messages": 2}
    stored = session.store.load_slots(session.session_id)[0]
    assert (stored.mode, stored.summary_override) == ("full", None)
    record = session.store.get_session(session.session_id)
    assert record is not None and record.last_summary_turn == 1
    for text in ("next", "and more", "and the last"):
        session.submit_turn_sync(text)
        history = session.current_slot.messages
        assert seen[-1] == history[:-1]  # every message of the history, no summary in it
    assert len(summarizer.requests) == 2  # summaries still written (to memory) when due
    assert "Previous summary: summary 1" in summarizer.requests[1][-1].text  # built on it
    assert session.current_slot.mode is SlotMode.Full


def test_a_focused_slot_takes_the_summary_as_its_override() -> None:
    summarizer = Summarizer()
    session, seen = _session(summarizer)
    session.set_slot_mode_sync("focused", recent_window=1)
    session.submit_turn_sync(LONG)
    slot = session.current_slot
    assert slot.mode is SlotMode.Focused and slot.summary_override == "summary 1"
    assert session.get_conversation_summary() == "summary 1"
    stored = session.store.load_slots(session.session_id)[0]
    assert (stored.mode, stored.summary_override) == ("focused", "summary 1")

    # The next turn sends the summary instead of the whole history.
    session.submit_turn_sync("next")
    context = seen[-1]
    assert isinstance(context[0], SystemMessage)
    assert context[0].text == SUMMARY_HEADER + "summary 1"
    assert context[-1].text == "next"


def test_a_prompt_without_the_placeholder_is_the_system_message() -> None:
    summarizer = Summarizer()
    session, _ = _session(summarizer, summary_prompt="Summarize tersely.")
    session.submit_turn_sync(LONG)
    system, user = summarizer.requests[0]
    assert system == SystemMessage(
        content="Summarize tersely.", id=system.id, created_at=system.created_at
    )
    assert user.text == f"user: {LONG}\nassistant: ok"


def test_a_prompt_with_messages_is_a_template_filled_with_the_transcript() -> None:
    summarizer = Summarizer()
    session, _ = _session(summarizer, summary_prompt="Condense {messages} -- for a lawyer.")
    session.submit_turn_sync(LONG)
    (request,) = summarizer.requests[0]
    assert isinstance(request, UserMessage)
    assert request.text == f"Condense user: {LONG}\nassistant: ok -- for a lawyer."


@pytest.mark.parametrize(
    ("language", "prompt", "marker"),
    [("en", DEFAULT_SUMMARY_PROMPT, "Conversation:"), ("zh", DEFAULT_SUMMARY_PROMPT_ZH, "对话")],
)
def test_the_default_prompt_follows_the_language(language: str, prompt: str, marker: str) -> None:
    assert "{messages}" in prompt and SummaryConfig(language=language).prompt == prompt  # type: ignore[arg-type]
    summarizer = Summarizer()
    session, _ = _session(summarizer, language=language)
    session.submit_turn_sync(LONG)
    (request,) = summarizer.requests[0]
    assert request.text == prompt.replace("{messages}", f"user: {LONG}\nassistant: ok")
    assert marker in request.text and "{messages}" not in request.text


def test_an_unknown_language_is_refused() -> None:
    with pytest.raises(InvalidInputError):
        SummaryConfig(language="fr")  # type: ignore[arg-type]


def test_the_agents_model_summarizes_when_no_summary_model_is_given() -> None:
    model = ScriptedModel(["the reply", "the summary", "after"])
    agent = Agent(
        name="a",
        model=model,
        summary_config=SummaryConfig(max_context_tokens=10, trigger_token_ratio=0.5),
    )
    session = AgentSession(agent)
    assert session.submit_turn_sync(LONG).reply == "the reply"
    assert session.get_conversation_summary() == "the summary"
    assert model.calls == 2


def test_the_summary_model_is_used_when_given() -> None:
    summarizer = Summarizer()
    session, seen = _session(summarizer)
    session.submit_turn_sync(LONG)
    assert len(seen) == 1  # the agent's model answered the turn only
    assert len(summarizer.requests) == 1
    assert "summarizer" in session.cost_tracker.by_model  # its usage is counted


def test_a_failing_summary_model_is_logged_and_the_turn_succeeds(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(messages: Sequence[Message]) -> str:
        raise ModelError("summary backend down")

    with caplog.at_level(logging.WARNING, logger="agcore_lab"):
        session, _ = _session(ScriptedModel(broken))
        result = session.submit_turn_sync(LONG)
    assert result.reply == "ok" and session.turn_index == 1
    assert session.last_summary_turn is None
    assert session.get_conversation_summary() is None
    assert session.current_slot.mode is SlotMode.Full
    (record,) = [r for r in caplog.records if "summary failed" in r.getMessage()]
    assert record.levelno == logging.WARNING and record.exc_info is not None
    stored = session.store.get_session(session.session_id)
    assert stored is not None and stored.turn_index == 1


def test_summarize_now_ignores_the_watermark() -> None:
    summarizer = Summarizer()
    session, _ = _session(summarizer, max_context_tokens=10_000)
    session.submit_turn_sync("short")
    assert session.summarize_sync() == "summary 1"
    assert session.get_conversation_summary() == "summary 1"
    assert session.last_summary_turn == 1


def test_transcript_cuts_tool_results() -> None:
    call = ToolCall(id="c", name="fetch", arguments={"url": "x"})
    messages: list[Message] = [
        UserMessage(content="get it"),
        AssistantMessage(content=None, tool_calls=(call,)),
        ToolMessage(content="A" * 50, tool_call_id="c", name="fetch"),
        AssistantMessage(content="done"),
    ]
    text = render_transcript(messages, max_tool_result_chars=10)
    assert text.splitlines() == [
        "user: get it",
        'assistant called fetch({"url": "x"})',
        "tool fetch: " + "A" * 10 + "... [40 chars cut]",
        "assistant: done",
    ]
    assert "A" * 50 in render_transcript(messages)  # 500 by default


def test_transcript_is_cut_to_the_limit_keeping_the_most_recent() -> None:
    messages: list[Message] = [UserMessage(content=f"message number {i:04d}") for i in range(500)]
    text = render_transcript(messages, max_chars=1_000)
    assert len(text) <= 1_000
    assert text.startswith(CUT_MARK)
    assert text.endswith("user: message number 0499")
    assert "message number 0000" not in text
    # Cut at a line boundary: every line after the mark is whole.
    for line in text.removeprefix(CUT_MARK).splitlines():
        assert line.startswith("user: message number ")
        assert len(line) == len("user: message number 0000")


def test_session_transcript_uses_the_configured_limits() -> None:
    summarizer = Summarizer()
    session, _ = _session(
        summarizer,
        max_transcript_chars=60,
        max_context_tokens=100_000,
        summary_prompt="Summarize.",  # no placeholder: the transcript is a message of its own
    )
    for i in range(5):
        session.submit_turn_sync(f"turn {i} " + "x" * 20)
    session.summarize_sync()
    transcript = summarizer.requests[0][-1].text
    assert len(transcript) <= 60 and transcript.startswith(CUT_MARK)
    assert transcript.endswith("assistant: ok")

"""The tool loop of one turn, run on a draft that the session commits only when it ends.

The loop: send the slot's context to the model; if the answer has tool calls, run them (each
failure becomes a tool-error message the model sees) and ask again; stop at an answer without
tool calls, or when ``max_tool_rounds`` rounds of tool calls were made (the unanswered calls
then get "not executed" tool messages, so the history stays valid for any chat API).

Nothing here touches the live session or the store: everything lands in a :class:`TurnDraft`.
A model error, a cancelled task or an abandoned stream therefore leaves the session as it was.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from agcore_lab.agent.agent import Agent
from agcore_lab.agent.events import ToolCallStarted, ToolResultReady, TurnEvent
from agcore_lab.agent.slots import ContextSlot, SlotMode, context_window
from agcore_lab.errors import ModelProtocolError
from agcore_lab.llm.base import ChatResponse, ResponseDone, ToolSpec
from agcore_lab.llm.call_record import RETRIES
from agcore_lab.llm.messages import AssistantMessage, Message, ToolCall, ToolMessage, UserMessage
from agcore_lab.llm.tools import approval_gate, run_tool_call
from agcore_lab.llm.usage import CostTracker, Usage
from agcore_lab.llm.window import MessageWindow
from agcore_lab.store.base import LinkRecord

if TYPE_CHECKING:
    from agcore_lab.agent.recording import CallRecorder
    from agcore_lab.llm.call_note import CallNote

__all__ = ["TurnDraft", "resume_turn", "run_turn", "run_turn_plain"]

_FULL = SlotMode.Full


@dataclass
class TurnDraft:
    """The pending state of a turn: working copies of the slot and cost, and what was added."""

    slot: ContextSlot
    cost: CostTracker
    new_messages: list[Message] = field(default_factory=list)
    links: list[LinkRecord] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    cost_delta: float = 0.0
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_results: list[ToolMessage] = field(default_factory=list)
    reply: str = ""
    status: Literal["completed", "max_tool_rounds", "interrupted"] = "completed"
    interrupt: tuple[ToolCall, list[ToolCall], float | None] | None = None
    recorder: CallRecorder | None = None

    @property
    def calls(self) -> Sequence[CallNote]:
        """The model calls recorded in this turn, as notes (to store with its commit; a
        :class:`~agcore_lab.llm.turn_calls.TurnCalls`, whose usual calls SQLite writes as
        they are)."""
        return self.recorder if self.recorder is not None else ()

    def add(self, message: Message) -> None:
        self.new_messages.append(message)
        self.links.extend(self.slot.extend([message]))

    def answer_unexecuted(self, call: ToolCall, why: str) -> None:
        """Answer a call that will not run with an error tool message (keeps the history
        valid for every chat API)."""
        note = ToolMessage(
            content=f"Error: not executed; {why}.",
            tool_call_id=call.id,
            name=call.name,
            is_error=True,
        )
        self.add(note)
        self.tool_results.append(note)

    def record(self, response: ChatResponse) -> float:
        """Add the response's usage and cost; return its cost."""
        self.usage = self.usage + response.usage
        cost = self.cost.record(response.model, response.usage)
        self.cost_delta += cost
        return cost


async def _ask(agent: Agent, draft: TurnDraft, stream: bool) -> AsyncIterator[TurnEvent]:
    slot = draft.slot
    recorder = draft.recorder
    model = agent.model
    if recorder is not None and recorder.quick and not stream and slot.mode is _FULL:
        params = getattr(model, "request_params", None)
        if not (params and isinstance(params, dict)):
            # The usual call, noted as one tuple with no probe (see llm/turn_calls.py); its
            # request is a Full slot's context window: the system prompt, then a window over
            # the whole history.
            window: MessageWindow = context_window(  # type: ignore[assignment]
                slot, agent.system_prompt
            )
            # Its head (the system prompt) and its history's length, as the window holds them
            # (read as they are: no property or length call on the turn's path).
            heads, tail = window._head, window._stop
            tools = agent.tool_specs
            counter = recorder.counter  # HTTP backends count their retries here
            if RETRIES.get() is not counter:
                RETRIES.set(counter)
            counter[0] = 0
            anchor = slot.head_node_id
            started = time.time_ns()
            perf = time.perf_counter_ns()
            try:
                response = await model.complete(window, tools=tools)
                latency = time.perf_counter_ns() - perf
                cost = draft.record(response)
            except BaseException as exc:
                name = model.model_name
                recorder.quick_failed(window, heads, tail, tools, name, anchor, started, perf, exc)
                raise
            name = model.model_name
            entry = (window, heads, tail, tools, name, anchor, started, latency, response, cost)
            if counter[0]:  # retried: a note that says how often
                recorder.keep_retried(entry, counter[0])
            else:
                recorder.entries.append(entry)
            draft.add(response.message)
            return
    context = context_window(slot, agent.system_prompt)
    tools = agent.tool_specs
    if recorder is not None:
        async for step in _ask_probed(agent, draft, stream, context, tools, recorder):
            yield step
        return
    reply: ChatResponse | None = None
    if not stream:  # recording is off
        reply = await model.complete(context, tools=tools)
    else:
        async for event in model.stream(context, tools=tools):
            if isinstance(event, ResponseDone):
                reply = event.response
            else:
                yield event
        if reply is None:
            raise ModelProtocolError("the model's stream ended without a final response")
    draft.record(reply)
    draft.add(reply.message)


async def _ask_probed(
    agent: Agent,
    draft: TurnDraft,
    stream: bool,
    context: Sequence[Message],
    tools: list[ToolSpec],
    recorder: CallRecorder,
) -> AsyncIterator[TurnEvent]:
    # Any call but the usual one: a probe notes it (agent/recording.py).
    response: ChatResponse | None = None
    probe = recorder.begin(
        agent.model,
        context,
        tools,
        stream=stream,
        slot=draft.slot,
        system_prompt=agent.system_prompt,
    )
    try:
        if not stream:
            response = await agent.model.complete(context, tools=tools)
        else:
            async for event in agent.model.stream(context, tools=tools):
                if isinstance(event, ResponseDone):
                    response = event.response
                else:
                    probe.piece()
                    yield event
            if response is None:
                raise ModelProtocolError("the model's stream ended without a final response")
    except BaseException as exc:
        probe.fail(exc)
        raise
    try:
        cost = draft.record(response)
    except BaseException as exc:
        probe.fail(exc)
        raise
    probe.done(response, cost=cost, prices=draft.cost.prices)  # priced once
    draft.add(response.message)


async def run_turn(
    agent: Agent, draft: TurnDraft, text: str, *, stream: bool = False
) -> AsyncIterator[TurnEvent]:
    """Run one turn's tool loop into ``draft``, yielding stream and tool events."""
    draft.add(UserMessage(content=text))
    try:
        async for event in _loop(agent, draft, stream, rounds=0):
            yield event
    except BaseException:
        if draft.recorder is not None:
            draft.recorder.abandon()  # the turn will not commit: store its calls now
        raise


async def run_turn_plain(agent: Agent, draft: TurnDraft, text: str) -> None:
    """Run one non-streamed turn's tool loop into ``draft``: :func:`run_turn` with
    ``stream=False``, as one coroutine chain (no async generator per layer), yielding nothing.

    Its tool events are not made: a non-streaming caller dropped them.
    """
    draft.add(UserMessage(content=text))
    try:
        rounds = 0
        while True:
            async for _ in _ask(agent, draft, False):  # a non-streamed ask yields nothing
                pass
            calls = _answered(agent, draft, rounds)
            if calls is None:
                return
            rounds += 1
            for position, call in enumerate(calls):
                message = _gated(agent, draft, calls, position, call)
                if message is None:
                    return  # interrupted: the call waits for a person
                if message is True:
                    message = (await run_tool_call(call, agent.tool_map)).message
                draft.add(message)
                draft.tool_results.append(message)
    except BaseException:
        if draft.recorder is not None:
            draft.recorder.abandon()  # the turn will not commit: store its calls now
        raise


async def resume_turn(
    agent: Agent,
    draft: TurnDraft,
    answer: ToolMessage,
    remaining: list[ToolCall],
    *,
    stream: bool = False,
) -> AsyncIterator[TurnEvent]:
    """Continue an interrupted turn: the decided call's tool message, the calls left from the
    same model answer, then the tool loop as usual."""
    draft.add(answer)
    draft.tool_results.append(answer)
    yield ToolResultReady(message=answer)
    try:
        async for event in _run_calls(agent, draft, remaining):
            yield event
        if draft.interrupt is None:
            async for event in _loop(agent, draft, stream, rounds=1):
                yield event
    except BaseException:
        if draft.recorder is not None:
            draft.recorder.abandon()
        raise


async def _run_calls(
    agent: Agent, draft: TurnDraft, calls: list[ToolCall]
) -> AsyncIterator[TurnEvent]:
    for position, call in enumerate(calls):
        gated = _gated(agent, draft, calls, position, call)
        if gated is None:
            return
        yield ToolCallStarted(call=call)
        message = gated if isinstance(gated, ToolMessage) else None
        if message is None:
            message = (await run_tool_call(call, agent.tool_map)).message
        draft.add(message)
        draft.tool_results.append(message)
        yield ToolResultReady(message=message)


def _gated(
    agent: Agent, draft: TurnDraft, calls: list[ToolCall], position: int, call: ToolCall
) -> ToolMessage | Literal[True] | None:
    # A call's gate: ``None`` when it waits for a person (the draft is interrupted there),
    # the gate's own tool message (refused or invalid), or ``True``: run it.
    gate = approval_gate(call, agent.tool_map)  # validates first, then asks the policy
    if gate is True:
        # Stop here: the call waits for a person; the rest of the answer waits with it.
        draft.interrupt = (
            call,
            list(calls[position + 1 :]),
            agent.tool_map[call.name].approval_timeout,
        )
        draft.status = "interrupted"
        return None
    return gate if isinstance(gate, ToolMessage) else True


async def _loop(
    agent: Agent, draft: TurnDraft, stream: bool, *, rounds: int
) -> AsyncIterator[TurnEvent]:
    while True:
        async for event in _ask(agent, draft, stream):
            yield event
        calls = _answered(agent, draft, rounds)
        if calls is None:
            return
        rounds += 1
        async for event in _run_calls(agent, draft, calls):
            yield event
        if draft.interrupt is not None:
            return


def _answered(agent: Agent, draft: TurnDraft, rounds: int) -> list[ToolCall] | None:
    # After the model's answer: the tool calls to run next, or ``None`` when the turn ends
    # (an answer without tool calls, or max_tool_rounds reached: its calls then answered).
    answer = draft.new_messages[-1]
    assert isinstance(answer, AssistantMessage)
    if not answer.tool_calls:
        draft.reply = answer.content or ""
        return None
    draft.tool_calls.extend(answer.tool_calls)
    if rounds >= agent.max_tool_rounds:
        for call in answer.tool_calls:
            draft.answer_unexecuted(
                call, f"the turn reached max_tool_rounds ({agent.max_tool_rounds})"
            )
        draft.status = "max_tool_rounds"
        return None
    return list(answer.tool_calls)

"""``ReplayModel``: answer requests from recorded model calls, so a notebook runs the same twice.

Run a notebook once against a real endpoint, export its calls
(``manager.export_calls("calls.jsonl")``), commit the file, and give the agents
``ReplayModel("calls.jsonl")``: every request identical to a recorded one (same messages in
wire form, tools, model and parameters — see :func:`~agcore_lab.llm.call_record.request_hash`)
gets the recorded answer, with the recorded usage. Identical requests made several times get
the recorded answers in their order.

A request that was not recorded raises :class:`ReplayMissError` naming the first message that
differs from the closest recording (strict, the default), or, with ``fallback=``, is sent to
that live model; the new answer is recorded in the replay model (``new_calls``) and answers the
same request next time. So a fork of a recorded session re-uses the recorded answers for the
shared prefix and asks the live model only for what changed (``live_calls`` counts them).

Streaming replays as streaming: the recorded text in pieces, then the tool calls, then
``ResponseDone``. Replayed answers carry ``metadata["replayed_from"]`` (the recorded call id),
so the session's call log marks those calls ``replayed``.

Example:
    >>> import asyncio
    >>> from agcore_lab import Agent, AgentSession, ScriptedModel
    >>> live = AgentSession(Agent(name="a", model=ScriptedModel(["recorded answer"])))
    >>> _ = live.submit_turn_sync("hi")
    >>> replay = ReplayModel(live.store.list_calls(live.session_id))
    >>> again = AgentSession(Agent(name="a", model=replay))
    >>> again.submit_turn_sync("hi").reply
    'recorded answer'
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from pydantic import JsonValue

from agcore_lab.errors import InvalidInputError, ReplayMissError
from agcore_lab.ids import new_id, utcnow
from agcore_lab.llm.base import (
    ChatModel,
    ChatResponse,
    ModelStreamEvent,
    ResponseDone,
    TextDelta,
    ToolCallDelta,
    ToolSpec,
)
from agcore_lab.llm.call_record import ModelCall, load_calls, request_hash, wire_form
from agcore_lab.llm.messages import Message

__all__ = ["ReplayMissError", "ReplayModel"]

REPLAYED_KEY = "replayed_from"
_PIECE = 16


def _excerpt(message: Message | None) -> str:
    if message is None:
        return "nothing (the recording ends there)"
    text = message.text or ", ".join(
        getattr(call, "name", "") for call in getattr(message, "tool_calls", ())
    )
    text = text if len(text) <= 80 else text[:77] + "..."
    return f"{message.role} {text!r}"


class ReplayModel:
    """A :class:`~agcore_lab.llm.base.ChatModel` answering from recorded model calls.

    Args:
        calls: ``ModelCall`` records (``manager.model_calls_sync(sid)``) or the path of a
            JSON-lines file written by ``manager.export_calls(path)``. Failed calls are
            ignored.
        fallback: A live model for requests that were not recorded; ``None`` (strict)
            raises :class:`ReplayMissError` instead.
        model_name: The name to report; by default the first recorded call's model.

    Attributes:
        replayed: How many requests were answered from the recording.
        live_calls: How many went to ``fallback``.
        new_calls: The calls answered by ``fallback``, as records (export them to extend
            the recording).

    Raises:
        InvalidInputError: No usable recorded call, or an unreadable file.
    """

    def __init__(
        self,
        calls: Sequence[ModelCall] | str | Path,
        *,
        fallback: ChatModel | None = None,
        model_name: str | None = None,
    ) -> None:
        if isinstance(calls, str | Path):
            calls = load_calls(calls)
        usable = [c for c in calls if c.status == "ok" and c.response is not None]
        if not usable:
            raise InvalidInputError(
                "ReplayModel needs at least one recorded call that succeeded; record a run "
                "first (manager.model_calls_sync(sid) or manager.export_calls(path))"
            )
        self.fallback = fallback
        self._name = model_name or usable[0].model
        self._recorded: list[ModelCall] = []
        self._by_hash: dict[str, list[ModelCall]] = {}
        self._used: dict[str, int] = {}
        self._signatures: list[tuple[str, dict[str, JsonValue]]] = []
        for call in usable:
            self._add(call)
        self.replayed = 0
        self.live_calls = 0
        self.new_calls: list[ModelCall] = []

    def _add(self, call: ModelCall) -> None:
        self._recorded.append(call)
        self._by_hash.setdefault(call.request_hash, []).append(call)
        signature = (call.model, call.params)
        if signature not in self._signatures:
            self._signatures.append(signature)

    @property
    def model_name(self) -> str:
        """The recorded model's name (pricing and the request hash use it)."""
        return self._name

    @property
    def request_params(self) -> dict[str, JsonValue]:
        """The recorded parameters (so the call log hashes requests the same way)."""
        return dict(self._signatures[0][1])

    def __repr__(self) -> str:
        return (
            f"ReplayModel({len(self._recorded)} recorded calls, model={self._name!r}, "
            f"fallback={self.fallback!r}, replayed={self.replayed}, live={self.live_calls})"
        )

    def _lookup(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelCall | None:
        for model, params in self._signatures:
            found = self._by_hash.get(request_hash(messages, tools, model, params))
            if found:
                digest = found[0].request_hash
                used = self._used.get(digest, 0)
                self._used[digest] = used + 1
                return found[min(used, len(found) - 1)]
        return None

    def _miss(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ReplayMissError:
        wire = [wire_form(m) for m in messages]
        best, best_index = self._recorded[0], -1
        for call in self._recorded:
            recorded = [wire_form(m) for m in call.request_messages]
            pairs = zip(wire, recorded, strict=False)
            same = sum(1 for _ in itertools.takewhile(lambda p: p[0] == p[1], pairs))
            if same > best_index:
                best, best_index = call, same
        index = best_index
        if index < len(messages) or index < len(best.request_messages):
            got = messages[index] if index < len(messages) else None
            want = best.request_messages[index] if index < len(best.request_messages) else None
            detail = (
                f"message {index} differs: the request has {_excerpt(got)}, the closest "
                f"recording ({best.call_id}) has {_excerpt(want)}"
            )
        else:
            detail = f"the messages match recording {best.call_id} but the tools differ"
        return ReplayMissError(
            f"no recorded call answers this request; {detail}. Record it again, or give "
            "ReplayModel(..., fallback=live_model) to ask a live model for what changed",
            index=index,
            call_id=best.call_id,
        )

    def _answer(self, call: ModelCall) -> ChatResponse:
        assert call.response is not None
        self.replayed += 1
        message = call.response.model_copy(
            update={
                "id": new_id("msg"),
                "created_at": utcnow(),
                "metadata": {**call.response.metadata, REPLAYED_KEY: call.call_id},
            }
        )
        return ChatResponse(
            message=message, usage=call.usage, model=call.model, finish_reason=call.finish_reason
        )

    def _remember(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], response: ChatResponse
    ) -> None:
        self.live_calls += 1
        model, params = self._signatures[0]
        call = ModelCall(
            call_id=new_id("call"),
            session_id="",
            model=response.model,
            params=params,
            request_messages=list(messages),
            tools=list(tools),
            response=response.message,
            finish_reason=response.finish_reason,
            usage=response.usage,
            request_hash=request_hash(messages, tools, model, params),
        )
        self.new_calls.append(call)
        self._add(call)
        self._used[call.request_hash] = len(self._by_hash[call.request_hash])

    async def complete(
        self, messages: Sequence[Message], *, tools: Sequence[ToolSpec] = ()
    ) -> ChatResponse:
        """The recorded answer to this request, or the fallback's.

        Raises:
            ReplayMissError: Not recorded, and no fallback.
        """
        found = self._lookup(messages, tools)
        if found is not None:
            return self._answer(found)
        if self.fallback is None:
            raise self._miss(messages, tools)
        response = await self.fallback.complete(messages, tools=tools)
        self._remember(messages, tools, response)
        return response

    async def stream(
        self, messages: Sequence[Message], *, tools: Sequence[ToolSpec] = ()
    ) -> AsyncIterator[ModelStreamEvent]:
        """The recorded answer as a stream (text in pieces, tool calls, ``ResponseDone``),
        or the fallback's stream."""
        found = self._lookup(messages, tools)
        if found is None:
            if self.fallback is None:
                raise self._miss(messages, tools)
            async for event in self.fallback.stream(messages, tools=tools):
                if isinstance(event, ResponseDone):
                    self._remember(messages, tools, event.response)
                yield event
            return
        response = self._answer(found)
        text = response.message.content or ""
        for start in range(0, len(text), _PIECE):
            yield TextDelta(text=text[start : start + _PIECE])
        for index, call in enumerate(response.message.tool_calls):
            yield ToolCallDelta(index=index, id=call.id, name=call.name)
            yield ToolCallDelta(index=index, arguments=call.to_openai()["function"]["arguments"])
        yield ResponseDone(response=response)

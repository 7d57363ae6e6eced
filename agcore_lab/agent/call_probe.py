"""A model request in flight and then the note of its call: :class:`CallProbe`, made by
:meth:`~agcore_lab.agent.recording.CallRecorder.begin` for every call but a turn's usual one
(which the turn notes as one tuple, see :mod:`agcore_lab.llm.turn_calls`).

The probe notes references and integers only (see :mod:`agcore_lab.llm.call_note`): which
messages of the request are the slot's history (a tail of the chain it ends at), which the
engine injected (system prompt, summary, pinned messages), its clocks and its retries.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from agcore_lab.agent.recording_hash import sent_request_hash
from agcore_lab.agent.slots import SUMMARY_HEADER, ContextSlot, SlotMode, _window_start
from agcore_lab.ids import new_id_value
from agcore_lab.llm.base import ChatModel, ChatResponse, ToolSpec
from agcore_lab.llm.call_note import SYSTEM_PROMPT_ONLY, CallNote
from agcore_lab.llm.call_record import RETRIES
from agcore_lab.llm.messages import Message, SystemMessage
from agcore_lab.llm.replay import REPLAYED_KEY
from agcore_lab.llm.window import MessageWindow

if TYPE_CHECKING:
    from agcore_lab.agent.recording import CallRecorder

__all__ = ["CallProbe", "error_text"]

_FULL = SlotMode.Full


def _tail_length(context: Sequence[Message], slot: ContextSlot) -> int:
    """How many messages at the end of ``context`` are the last messages of ``slot``."""
    history = slot.messages
    start = 0 if slot.mode is SlotMode.Full else _window_start(history, slot.recent_window)
    count = len(history) - start
    if count and len(context) >= count and context[-count] is history[start]:
        if context[-1] is history[-1]:
            return count
    count = 0  # the context was built some other way: compare message by message
    while count < min(len(context), len(history)) and context[-1 - count] is history[-1 - count]:
        count += 1
    return count


def _injected(
    context: Sequence[Message], head: int, system_prompt: str, slot: ContextSlot | None
) -> dict[int, str]:
    labels: dict[int, str] = {}
    if not head:
        return labels
    pinned = set(slot.pinned_ids) if slot is not None and slot.pinned_ids else ()
    for index, message in enumerate(context[:head]):
        if isinstance(message, SystemMessage) and index == 0 and message.content == system_prompt:
            labels[index] = "system_prompt"
        elif isinstance(message, SystemMessage) and message.content.startswith(SUMMARY_HEADER):
            labels[index] = "summary"
        elif message.id in pinned:
            labels[index] = "pinned"
        else:
            labels[index] = "injected"
    return labels


class CallProbe(CallNote):
    """One request in flight, and then the note of its call; made by
    :meth:`CallRecorder.begin`.

    It notes references and integers only (see :mod:`agcore_lab.llm.call_note`): the
    request hash is computed here only when a redactor or a listener will see the record
    (they get a full :class:`ModelCall`); otherwise the store derives it at read time.
    """

    _first: int | None = None

    def __init__(
        self,
        recorder: CallRecorder,
        model: ChatModel,
        context: Sequence[Message],
        tools: Sequence[ToolSpec],
        *,
        stream: bool,
        slot: ContextSlot | None,
        system_prompt: str,
    ) -> None:
        # Only what differs from CallNote's defaults is set: this runs for every request.
        # A turn's request is a window over the history, other requests are new lists:
        # keep either as it is (no copy of the history). Other sequences are copied.
        if type(context) is not MessageWindow and not isinstance(context, list | MessageWindow):
            context = list(context)
        # The call id stays a number until its text is asked for (a turn's common call is
        # stored by that number); its clock is the call's start.
        self.id_value = value = new_id_value()
        self.started_ns = value >> 20
        self.session_id, self.slot_id, self.turn_index, self.kind = recorder.header
        self.model = model.model_name
        self.request = context
        self.tools = tools
        # Every note sets the same attributes in the same order (one shared key layout: the
        # store's reads of them stay fast), the rare ones included.
        self.streamed = stream
        params = getattr(model, "request_params", None)
        self.params = dict(params) if params and isinstance(params, dict) else None
        self.window_start = 0
        self.tail = None
        self.injected = None
        self.request_hash = None
        if slot is None:
            slot_len = tail = 0
            anchor = recorder.base_head
            head = len(context)
        else:
            history = slot.messages
            slot_len = len(history)
            anchor = slot.head_node_id
            if (
                type(context) is MessageWindow
                and slot.mode is _FULL
                and context.ends_with_all_of(history)
            ):
                # The usual turn request (context_window): the system prompt, then it all.
                tail = slot_len
                head = 1 if system_prompt else 0
            else:
                tail = _tail_length(context, slot)
                if tail:
                    self.window_start = slot_len - tail
                head = len(context) - tail
        if anchor:
            self.tail = (anchor, tail)
        if head == 1 and system_prompt and type(context) is MessageWindow:
            self.injected = SYSTEM_PROMPT_ONLY  # context_window's head: the system prompt
        elif head:
            self.injected = _injected(context, head, system_prompt, slot)
        self._recorder: CallRecorder | None = recorder
        self._slot_len = slot_len
        if recorder.eager_hash:
            self.request_hash = sent_request_hash(
                recorder.session_id, context, tail, slot, tools, self.model, self.params or {}
            )
        self._counter = [0]
        self._first = None
        RETRIES.set(self._counter)  # HTTP backends count their retries here
        self._perf = time.perf_counter_ns()

    def piece(self) -> None:
        """A streamed piece arrived (the first one sets the time to first token)."""
        if self._first is None:
            self._first = time.perf_counter_ns()

    def _end(self) -> CallRecorder:
        # The note outlives the request in its recorder's list: it lets go of the recorder
        # (no reference cycle to wait for the garbage collector).
        recorder = self._recorder
        assert recorder is not None, "a call is ended once"
        self._recorder = None
        self.latency_ns = time.perf_counter_ns() - self._perf
        self.ttft_ns = self._first - self._perf if self._first is not None else None
        self.retries = self._counter[0]
        return recorder

    def done(
        self, response: ChatResponse, *, cost: float | None = None, prices: object = None
    ) -> None:
        """The answer came: keep the call. ``cost``: its cost as the caller worked it out
        with ``prices`` (used when those are the recorder's prices, not worked out again)."""
        recorder = self._end()
        message = response.message
        self.response = message
        self.finish_reason = response.finish_reason
        usage = self.usage = response.usage
        if cost is None or prices is not recorder.prices:
            cost = recorder.prices.cost(response.model, usage)
        self.cost = cost
        self.replayed = REPLAYED_KEY in message.metadata
        # A turn's answer joins the slot's chain in the turn's commit; a summary's does not.
        in_chain = recorder.kind == "turn"
        if recorder.redactor is None and not recorder.listeners:  # keep()'s usual case
            self.response_stored = in_chain
            self.rides = in_chain and self.tail is not None
            recorder.entries.append(self)
            recorder._slot_lens.append(self._slot_len)
            return
        recorder.keep(self, response_in_chain=in_chain)

    def fail(self, exc: BaseException) -> None:
        """The request failed (or was cancelled): keep the call with its error, and store the
        recorder's calls at once (the turn will not commit them)."""
        recorder = self._end()
        self.status = "error"
        self.error = error_text(exc)
        recorder.keep(self, response_in_chain=False)
        recorder.abandon()


def error_text(exc: BaseException) -> str:
    kind = "cancelled" if not isinstance(exc, Exception) else type(exc).__name__
    return f"{kind}: {exc}" if str(exc) else kind

"""Context slots: named message histories that fork and merge.

A session has one or more slots; turns go to the *current* one. ``fork`` copies a slot's history
into a new slot that remembers its parent and fork point; ``merge`` brings a slot's work back:

- ``MergeStrategy.Append`` — the child's messages after the fork point (or after its last
  merge) are appended to the target;
- ``MergeStrategy.Replace`` — the child's whole history replaces the target's;
- ``MergeStrategy.Summarize`` — the model condenses the child's new messages into one message
  that is appended to the target (the session asks the model; see ``AgentSession.merge_slot``).

A slot builds the model's context in one of two modes: ``SlotMode.Full`` (every message) or
``SlotMode.Focused`` (the summary override, pinned messages, and a recent window).

Storage (see docs/design.md): messages are never copied. Each slot keeps ``head_node_id``, the
node at the end of its chain of links; :meth:`ContextSlot.extend` returns the new links to store.

A slot's ``messages`` (a :class:`~agcore_lab.llm.history.MessageHistory`: it behaves as a list,
and keeps a history read from the store compact in memory) are only ever appended to: code that
shortens or rewrites a history assigns a new one (``slot.messages =
slot.messages.prefix(n)``), because a turn's requests are windows over it
(:func:`context_window`), not copies of it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from functools import lru_cache

from agcore_lab.errors import InvalidInputError
from agcore_lab.ids import new_id, utcnow
from agcore_lab.llm.history import MessageHistory
from agcore_lab.llm.messages import Message, SystemMessage, ToolMessage
from agcore_lab.llm.window import MessageWindow
from agcore_lab.store._trusted import trusted
from agcore_lab.store.base import LinkRecord, SlotMode, SlotRecord

__all__ = [
    "ContextSlot",
    "MergeStrategy",
    "SlotMode",
    "as_strategy",
    "build_context",
    "validate_slot_id",
]

# The fields every link sets (one set for all: a link is frozen, see trusted()).
_LINK_FIELDS = {"node_id", "parent_node_id", "message_id", "depth"}

_SLOT_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
SUMMARY_HEADER = "Summary of the earlier conversation:\n"


class MergeStrategy(StrEnum):
    """How :meth:`ContextSlot.merge` brings a child slot's work into its target."""

    Append = "append"
    Replace = "replace"
    Summarize = "summarize"


def as_strategy(strategy: MergeStrategy | str, **context: str | None) -> MergeStrategy:
    """``strategy`` as a :class:`MergeStrategy`.

    Raises:
        InvalidInputError: Not one of ``append``, ``replace``, ``summarize``.
    """
    try:
        return MergeStrategy(strategy)
    except ValueError:
        names = ", ".join(repr(s.value) for s in MergeStrategy)
        raise InvalidInputError(
            f"unknown merge strategy {strategy!r}; use one of {names}", **context
        ) from None


def validate_slot_id(slot_id: str) -> str:
    """Return ``slot_id`` if it is 1-64 letters, digits, ``_ . : -``; raise otherwise."""
    if not isinstance(slot_id, str) or not _SLOT_ID.match(slot_id):
        raise InvalidInputError(
            f"slot id {slot_id!r} must be 1-64 letters, digits, '_', '.', ':' or '-'",
            slot_id=slot_id,
        )
    return slot_id


@dataclass
class ContextSlot:
    """One message history in a session.

    Attributes:
        slot_id: The slot's name, unique in its session.
        messages: The history, oldest first (the system prompt is not part of it): a
            :class:`~agcore_lab.llm.history.MessageHistory` (a list given here becomes its
            contents, not copied).
        mode: ``SlotMode.Full`` or ``SlotMode.Focused``.
        summary_override: In Focused mode, stands for the messages before the recent window.
        pinned_ids: Ids of messages that Focused mode always keeps.
        recent_window: How many recent messages Focused mode keeps.
        parent_slot_id: The slot this one was forked from.
        fork_point: How many of the parent's messages this slot shares.
        merge_base: Messages before this index were already merged (starts at ``fork_point``).
        head_node_id: The stored chain node at the end of the history.
        merge_strategy: The strategy this slot will be merged back with (given at fork);
            ``merge`` uses it unless told otherwise.
        chain_nodes: Which stored chain node holds each message, when known: ``{index:
            node_id}`` for the messages placed by a link (a merge), every other message being
            its own node. It lets a rollback or a fork to an earlier node of this chain reuse
            the messages instead of reading them again. ``None`` when unknown (a slot built
            from a snapshot, or given messages).
    """

    slot_id: str
    messages: MessageHistory = field(default_factory=MessageHistory)
    mode: SlotMode = SlotMode.Full
    summary_override: str | None = None
    pinned_ids: list[str] = field(default_factory=list)
    recent_window: int = 20
    parent_slot_id: str | None = None
    fork_point: int = 0
    merge_base: int = 0
    head_node_id: str | None = None
    created_at: datetime = field(default_factory=utcnow)
    merge_strategy: MergeStrategy | None = None
    chain_nodes: dict[int, str] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.messages, MessageHistory):
            self.messages = MessageHistory(self.messages)
        if self.chain_nodes is None and not self.messages and self.head_node_id is None:
            self.chain_nodes = {}  # an empty chain is known
        validate_slot_id(self.slot_id)
        if self.recent_window < 1:
            raise InvalidInputError("recent_window must be at least 1", slot_id=self.slot_id)

    def __repr__(self) -> str:
        parent = (
            f", parent={self.parent_slot_id!r}@{self.fork_point}" if self.parent_slot_id else ""
        )
        return (
            f"ContextSlot({self.slot_id!r}, {len(self.messages)} messages, "
            f"mode={self.mode.value}{parent})"
        )

    def copy(self) -> ContextSlot:
        """A working copy: same messages (shared, they are immutable), own lists."""
        return replace(
            self,
            messages=self.messages.copy(),
            pinned_ids=list(self.pinned_ids),
            chain_nodes=None if self.chain_nodes is None else dict(self.chain_nodes),
        )

    def chain_position(self, node_id: str, depth: int) -> int | None:
        """The index in :attr:`messages` of stored chain node ``node_id`` at ``depth`` (a
        node's depth is its index), or ``None`` when it is not a node of this slot's chain or
        the slot's nodes are not known. Messages ``[: index + 1]`` are then that node's chain.
        """
        nodes, messages = self.chain_nodes, self.messages
        if nodes is None or not 0 <= depth < len(messages):
            return None
        last = len(messages) - 1
        if (nodes.get(last) or messages.message_id(last)) != self.head_node_id:
            return None  # the messages were changed without their nodes: nothing is known
        return depth if (nodes.get(depth) or messages.message_id(depth)) == node_id else None

    def draft(self) -> ContextSlot:
        """A working copy for a turn that shares this slot's history list (no O(history)
        copy): the turn appends to it; if the turn is not committed, call
        :meth:`drop_after` on this slot to give it back its own history."""
        return replace(self, pinned_ids=list(self.pinned_ids))

    def drop_after(self, count: int) -> None:
        """Keep only the first ``count`` messages, in a new history (a history is never
        cut in place: windows of requests made from it stay as they were)."""
        if len(self.messages) > count:
            self.messages = self.messages.prefix(count)

    def extend(self, messages: list[Message], *, new: bool = True) -> list[LinkRecord]:
        """Append messages; return the chain links that record them.

        Args:
            messages: The messages to append.
            new: The messages are new (placed for the first time: the message itself is the
                chain node, so storing it needs no extra row). ``False`` for messages that are
                stored already, as in a merge: each gets a link node of its own.
        """
        links = []
        for message in messages:
            # From a checked message's id, the slot's head and a count: no validation pass
            # (a turn links each of its messages).
            link = trusted(
                LinkRecord,
                {
                    "node_id": message.id if new else new_id("node"),
                    "parent_node_id": self.head_node_id,
                    "message_id": message.id,
                    "depth": len(self.messages),
                },
                _LINK_FIELDS,
            )
            if not new and self.chain_nodes is not None:
                self.chain_nodes[len(self.messages)] = link.node_id
            self.messages.append(message)
            self.head_node_id = link.node_id
            links.append(link)
        return links

    def fork(self, child_id: str, strategy: MergeStrategy | str | None = None) -> ContextSlot:
        """A new slot with this slot's history, remembering this slot, the fork point and (if
        given) the strategy it will be merged back with.

        Raises:
            InvalidInputError: A malformed ``child_id`` or an unknown ``strategy``.
        """
        chosen = as_strategy(strategy, slot_id=child_id) if strategy is not None else None
        return ContextSlot(
            merge_strategy=chosen,
            slot_id=validate_slot_id(child_id),
            messages=self.messages.copy(),
            mode=self.mode,
            summary_override=self.summary_override,
            pinned_ids=list(self.pinned_ids),
            recent_window=self.recent_window,
            parent_slot_id=self.slot_id,
            fork_point=len(self.messages),
            merge_base=len(self.messages),
            head_node_id=self.head_node_id,
            chain_nodes=None if self.chain_nodes is None else dict(self.chain_nodes),
        )

    def new_messages(self) -> list[Message]:
        """The messages a merge would bring: those after ``merge_base``."""
        return self.messages[self.merge_base :]

    def merge(
        self,
        child: ContextSlot,
        strategy: MergeStrategy | str | None = None,
        *,
        summary: Message | None = None,
    ) -> list[LinkRecord]:
        """Bring ``child``'s work into this slot; return the new chain links.

        Args:
            child: The slot to merge from (usually forked from this one).
            strategy: Append, Replace or Summarize; by default the child's own
                ``merge_strategy`` (given at fork), else Append.
            summary: For Summarize, the condensed message to append (the session makes it).

        Raises:
            InvalidInputError: Merging a slot into itself, an unknown strategy, or Summarize
                without a summary message.
        """
        strategy = child.resolve_strategy(strategy)
        if child is self or child.slot_id == self.slot_id:
            raise InvalidInputError("cannot merge a slot into itself", slot_id=self.slot_id)
        if strategy is MergeStrategy.Append:
            links = self.extend(child.new_messages(), new=False)
        elif strategy is MergeStrategy.Replace:
            self.messages = child.messages.copy()
            self.chain_nodes = None if child.chain_nodes is None else dict(child.chain_nodes)
            self.head_node_id = child.head_node_id
            links = []
        else:
            if summary is None:
                raise InvalidInputError(
                    "a Summarize merge needs the summary message", slot_id=child.slot_id
                )
            links = self.extend([summary])
        child.merge_base = len(child.messages)
        return links

    def resolve_strategy(self, strategy: MergeStrategy | str | None = None) -> MergeStrategy:
        """The strategy a merge of this slot uses: ``strategy`` if given, else the one
        remembered at fork, else Append.

        Raises:
            InvalidInputError: An unknown strategy.
        """
        if strategy is None:
            return self.merge_strategy or MergeStrategy.Append
        return as_strategy(strategy, slot_id=self.slot_id)

    def to_record(self, session_id: str, *, updated_at: datetime | None = None) -> SlotRecord:
        """The stored form of this slot (``updated_at``: its time, now when not given)."""
        # The slot's fields were checked when it was made: no validation pass (a record is
        # built at every commit and checkpoint).
        return trusted(
            SlotRecord,
            {
                "session_id": session_id,
                "slot_id": self.slot_id,
                "parent_slot_id": self.parent_slot_id,
                "fork_point": self.fork_point,
                "merge_base": self.merge_base,
                "mode": SlotMode(self.mode),
                "head_node_id": self.head_node_id,
                "summary_override": self.summary_override,
                "pinned_ids": list(self.pinned_ids),
                "recent_window": self.recent_window,
                "created_at": self.created_at,
                "updated_at": updated_at or utcnow(),
                "merge_strategy": self.merge_strategy.value if self.merge_strategy else None,
            },
        )

    @classmethod
    def from_record(
        cls,
        record: SlotRecord,
        messages: MessageHistory | list[Message],
        chain_nodes: dict[int, str] | None = None,
    ) -> ContextSlot:
        """Rebuild a slot from its record and its loaded chain (``chain_nodes``: see the
        attribute; ``None`` when not known)."""
        return cls(
            chain_nodes=chain_nodes,
            slot_id=record.slot_id,
            messages=messages if isinstance(messages, MessageHistory) else MessageHistory(messages),
            mode=SlotMode(record.mode),
            summary_override=record.summary_override,
            pinned_ids=list(record.pinned_ids),
            recent_window=record.recent_window,
            parent_slot_id=record.parent_slot_id,
            fork_point=record.fork_point,
            merge_base=record.merge_base,
            head_node_id=record.head_node_id,
            created_at=record.created_at,
            merge_strategy=MergeStrategy(record.merge_strategy) if record.merge_strategy else None,
        )


@lru_cache(maxsize=256)
def _system_message(prompt: str) -> SystemMessage:
    # The same object for the same prompt, so a model can tell an unchanged context prefix.
    return SystemMessage(content=prompt)


def _window_start(messages: Sequence[Message], window: int) -> int:
    start = max(0, len(messages) - window)
    # Never start on a tool result: its assistant tool call must come with it.
    while start > 0 and isinstance(messages[start], ToolMessage):
        start -= 1
    return start


def context_window(slot: ContextSlot, system_prompt: str = "") -> Sequence[Message]:
    """:func:`build_context` without copying a Full slot's history: a
    :class:`~agcore_lab.llm.window.MessageWindow` over it (a turn's requests)."""
    if slot.mode is SlotMode.Full:
        head = (_system_message(system_prompt),) if system_prompt else ()
        return MessageWindow(head, slot.messages, len(slot.messages))
    return build_context(slot, system_prompt)


def build_context(slot: ContextSlot, system_prompt: str = "") -> list[Message]:
    """The messages to send to the model for ``slot``.

    Full: the system prompt and every message. Focused: the system prompt, the summary
    override (as a system message), pinned messages older than the window, then the window
    (widened so it never starts with an orphaned tool result).
    """
    head: list[Message] = [_system_message(system_prompt)] if system_prompt else []
    if slot.mode is SlotMode.Full:
        return head + list(slot.messages)
    start = _window_start(slot.messages, slot.recent_window)
    if slot.summary_override:
        head.append(SystemMessage(content=SUMMARY_HEADER + slot.summary_override))
    pinned = set(slot.pinned_ids)
    history = slot.messages
    older = [history[i] for i in range(start) if pinned and history.message_id(i) in pinned]
    return head + older + history[start:]

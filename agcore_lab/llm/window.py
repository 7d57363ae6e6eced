"""``MessageWindow``: a request's messages without copying the history they come from.

A turn's request is the system prompt followed by the slot's whole history. Copying that list
for every request costs O(history) (and touches every message object: at 20,000 messages the
copy and its release cost more than the rest of the turn). A window is a frozen view instead:
a few head messages, then the first ``stop`` messages of a history (a list or a
:class:`~agcore_lab.llm.history.MessageHistory`). Histories are only ever appended to (a slot
that changes otherwise gets a new one), so the view never changes.

A window is a :class:`~collections.abc.Sequence`: ``len``, indexing (negative too), slicing
(a plain list), iteration and ``==`` against any sequence behave as on the list it stands for.

Example:
    >>> from agcore_lab.llm.messages import SystemMessage, UserMessage
    >>> history = [UserMessage(content="a"), UserMessage(content="b")]
    >>> window = MessageWindow((SystemMessage(content="s"),), history, 2)
    >>> history.append(UserMessage(content="later"))
    >>> [m.text for m in window]
    ['s', 'a', 'b']
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import overload

from agcore_lab.llm.messages import Message

__all__ = ["MessageWindow"]


class MessageWindow(Sequence[Message]):
    """``head`` then ``base[:stop]``, as one read-only sequence (see the module docstring).

    Args:
        head: Messages before the history (the system prompt).
        base: A history that is only appended to while the window is in use.
        stop: How many of its messages the window holds.
    """

    __slots__ = ("_base", "_head", "_stop")

    def __init__(self, head: tuple[Message, ...], base: Sequence[Message], stop: int) -> None:
        self._head, self._base, self._stop = head, base, stop

    def __len__(self) -> int:
        return len(self._head) + self._stop

    @property
    def head(self) -> tuple[Message, ...]:
        """The messages before the history (the system prompt)."""
        return self._head

    def ends_with_all_of(self, base: Sequence[Message]) -> bool:
        """Whether the window's history part is the whole of ``base`` as it is now (O(1))."""
        return self._base is base and self._stop == len(base)

    @overload
    def __getitem__(self, index: int) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...

    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        head = len(self._head)
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step != 1:
                return [self[i] for i in range(start, stop, step)]
            if stop <= start:
                return []
            out = list(self._head[start:stop]) if start < head else []
            return out + list(self._base[max(0, start - head) : max(0, stop - head)])
        size = len(self)
        if index < 0:
            index += size
        if not 0 <= index < size:
            raise IndexError("message window index out of range")
        return self._head[index] if index < head else self._base[index - head]

    def __iter__(self) -> Iterator[Message]:
        return itertools.chain(self._head, itertools.islice(self._base, self._stop))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, MessageWindow | list | tuple):
            return len(self) == len(other) and list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # compares by content, like a list

    def __repr__(self) -> str:
        return f"MessageWindow({len(self._head)} head + {self._stop} history messages)"

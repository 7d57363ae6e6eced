"""``MessageHistory``: a slot's history, compact in memory, behaving as a list of messages.

A pydantic message costs about four times its text in RAM (the instance, its ``__dict__``,
its id string, its ``datetime``, the metadata dict ...): a session of 10,000 turns loaded from
the store kept 15.6 MB for 3.8 MB of text. Most stored messages are plain — a role, a text, an
id and a time — so a history keeps those in columns: the texts in one list, the ids in one
``bytes`` (they all have the same length), the times in an ``array`` of microseconds and the
roles in one byte each. Everything else (tool calls, tool results, metadata, names) stays a
message object. A message of the columns is built when it is read, with no validation (its
values were validated when it was stored), and equals the message that was stored.

While a built message is alive, reading the same position gives the same object (a weak
cache), so ``history[i] is history[i]`` and code that checks identity (the request hash, the
model's prefix memo) behaves as on a list; when nothing holds it any more, it is freed.

A history is a :class:`~collections.abc.Sequence` that is only ever appended to (a slot that
shortens or rewrites its history gets a new one: :meth:`MessageHistory.prefix`). ``len``,
indexing (negative too), iteration, ``==`` against a list, ``+`` and ``append``/``extend`` behave
as on a list; a slice is a plain ``list``. Appended messages are kept as they are.

Example:
    >>> from agcore_lab.llm.messages import UserMessage
    >>> builder = HistoryBuilder()  # as the store reads a chain: plain rows as values
    >>> builder.add_plain("user", "msg_0000000000000000a", "a", 1_700_000_000_000_000)
    True
    >>> history = builder.build()
    >>> history.append(UserMessage(content="b"))
    >>> [m.text for m in history], len(history.prefix(1))
    (['a', 'b'], 1)
    >>> history[0] is history[0]
    True
"""

from __future__ import annotations

import weakref
from array import array
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, overload

from agcore_lab.llm.messages import AssistantMessage, Message, SystemMessage, UserMessage

__all__ = ["HistoryBuilder", "MessageHistory"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICRO = timedelta(microseconds=1)
_KINDS: tuple[type[Message], ...] = (SystemMessage, UserMessage, AssistantMessage)
_CODES = {kind: code for code, kind in enumerate(_KINDS, start=1)}
_ROLES = [kind.model_fields["role"].default for kind in _KINDS]
_ROLE_CODES = {role: code for code, role in enumerate(_ROLES, start=1)}
_SPECIAL = 0
# The fields a plain stored message was built with (the store's rows give exactly these).
_PLAIN_FIELDS = frozenset({"id", "role", "content", "created_at"})
_FIELDS_SET = {kind: set(_PLAIN_FIELDS) for kind in _KINDS}  # one set per kind, shared
_DEFAULTS = {
    kind: {
        n: f.default
        for n, f in kind.model_fields.items()
        if n not in _PLAIN_FIELDS and n != "metadata"
    }
    for kind in _KINDS
}
_set = object.__setattr__


class _Ref(weakref.ref):  # type: ignore[type-arg]
    """A weak reference that knows the index it was made for."""

    __slots__ = ("index",)
    index: int


class _Columns:
    """Messages ``0 .. n-1`` of a history in columns; never changed once built (histories
    that share a prefix share one ``_Columns``)."""

    __slots__ = (
        "alive",
        "codes",
        "contents",
        "forget",
        "ids",
        "micros",
        "pending",
        "special",
        "tokens",
        "width",
    )

    def __init__(self) -> None:
        self.codes = bytearray()
        self.contents: list[str | None] = []
        self.ids = b""  # every id, ``width`` characters each (when frozen)
        self.pending: list[str] = []  # the ids while building
        self.width = 0
        self.micros = array("q")
        self.special: dict[int, Message] = {}
        # index -> a weak reference to the message built there, while it is alive; its
        # callback forgets it (a plain dict of C weakrefs: a WeakValueDictionary took 4x as
        # long to fill, which a full iteration of a long history pays for every message).
        self.alive: dict[int, _Ref] = {}
        alive = self.alive

        def forget(ref: _Ref, get: Any = alive.get, pop: Any = alive.pop) -> None:
            if get(ref.index) is ref:  # not a newer one made for the same index
                pop(ref.index)

        self.forget = forget
        self.tokens: array[int] | None = None  # running totals of token estimates, when asked

    def add_plain(self, role: str, message_id: str, content: str | None, micros: int) -> bool:
        """Add a plain message by its values (``content`` ``None`` only for an assistant);
        ``False`` (nothing added) when its id does not fit the ids' column (empty, another
        length, not ASCII)."""
        width = self.width or len(message_id)
        if not message_id or len(message_id) != width or not message_id.isascii():
            return False
        self.width = width
        self.codes.append(_ROLE_CODES[role])
        self.contents.append(content)
        self.pending.append(message_id)
        self.micros.append(micros)
        return True

    def add(self, message: Message) -> None:
        """Add a message: in the columns when it is plain (and, while it is alive, the
        message read there), else as it is."""
        if _plain_code(message):
            values = message.__dict__
            micros = (values["created_at"] - _EPOCH) // _MICRO
            index = len(self.codes)
            if self.add_plain(values["role"], values["id"], values["content"], micros):
                ref = self.alive[index] = _Ref(message, self.forget)
                ref.index = index
                return
        self.special[len(self.codes)] = message
        self.codes.append(_SPECIAL)
        self.contents.append(None)
        self.pending.append("")
        self.micros.append(0)

    def freeze(self) -> _Columns:
        width = self.width
        self.ids = "".join(i or "\0" * width for i in self.pending).encode("ascii")
        self.pending = []
        return self

    def token_totals(self) -> array[int]:
        """``totals[i]``: the estimated tokens of messages ``0 .. i-1`` (computed once)."""
        if self.tokens is None:
            from agcore_lab.llm.tokens import estimate_message_tokens

            totals, total = array("q", [0]), 0
            for index in range(len(self.codes)):
                ref = self.alive.get(index)
                found = ref() if ref is not None else self.special.get(index)
                if found is not None:
                    total += found.token_estimate
                else:
                    total += estimate_message_tokens(self.message(index))
                totals.append(total)
            self.tokens = totals
        return self.tokens

    def __len__(self) -> int:
        return len(self.codes)

    def message(self, index: int) -> Message:
        ref = self.alive.get(index)
        if ref is not None:
            found: Message | None = ref()
            if found is not None:
                return found
        code = self.codes[index]
        if code == _SPECIAL:
            return self.special[index]
        kind = _KINDS[code - 1]
        start = index * self.width
        values: dict[str, Any] = {
            # In the fields' order, as a validation would have made them.
            "id": self.ids[start : start + self.width].decode("ascii"),
            "created_at": _EPOCH + timedelta(0, 0, self.micros[index]),
            "metadata": {},
            "role": _ROLES[code - 1],
            "content": self.contents[index],
            **_DEFAULTS[kind],
        }
        built = kind.__new__(kind)
        _set(built, "__dict__", values)
        _set(built, "__pydantic_fields_set__", _FIELDS_SET[kind])
        _set(built, "__pydantic_extra__", None)
        _set(built, "__pydantic_private__", None)
        ref = self.alive[index] = _Ref(built, self.forget)
        ref.index = index
        return built

    def message_id(self, index: int) -> str:
        if self.codes[index] == _SPECIAL:
            return self.special[index].id
        start = index * self.width
        return self.ids[start : start + self.width].decode("ascii")


def _plain_code(message: Message) -> int:
    """The column code of a plain message (one rebuilt equal from its columns), else 0."""
    kind = type(message)
    code = _CODES.get(kind, _SPECIAL)
    if not code:
        return _SPECIAL
    values = message.__dict__
    if (
        values["metadata"]
        or values["created_at"].tzinfo is not UTC
        or message.__pydantic_extra__
        or message.__pydantic_private__
        or message.__pydantic_fields_set__ != _PLAIN_FIELDS
    ):
        return _SPECIAL
    if kind is UserMessage:
        plain = values["name"] is None
    elif kind is AssistantMessage:
        plain = not values["tool_calls"]
    else:
        plain = True
    content = values["content"]
    return code if plain and (content is None or type(content) is str) else _SPECIAL


class MessageHistory(Sequence[Message]):
    """A slot's messages, oldest first: compact columns, then messages appended since.

    Args:
        messages: The messages; a ``list`` is used as it is (appends go to it), without
            compacting. Use :meth:`compact` for a history read from a store.
    """

    __slots__ = ("_columns", "_count", "_tail")

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        self._columns: _Columns | None = None
        self._count = 0
        self._tail: list[Message] = messages if type(messages) is list else list(messages)

    @classmethod
    def compact(cls, messages: Iterable[Message]) -> MessageHistory:
        """A history of ``messages`` kept in columns (plain messages) and objects (the rest).

        Reading a message back gives the one given while it is alive elsewhere, else an equal
        one built from the columns."""
        builder = HistoryBuilder()
        for message in messages:
            builder.add(message)
        return builder.build()

    def prefix(self, count: int) -> MessageHistory:
        """A new history of the first ``count`` messages, sharing this one's columns (no
        message is built or copied)."""
        history = MessageHistory.__new__(MessageHistory)
        history._columns, history._count = self._columns, min(self._count, max(count, 0))
        history._tail = self._tail[: max(count - self._count, 0)]
        return history

    def copy(self) -> MessageHistory:
        """A new history of the same messages (appends to either do not reach the other)."""
        return self.prefix(len(self))

    def append(self, message: Message) -> None:
        """Add ``message`` at the end."""
        self._tail.append(message)

    def extend(self, messages: Iterable[Message]) -> None:
        """Add ``messages`` at the end."""
        self._tail.extend(messages)

    def estimate_tokens(self) -> int:
        """The estimated tokens of the whole history (as
        :func:`~agcore_lab.llm.tokens.estimate_messages_tokens`), without building the
        messages of the columns again after the first time."""
        total = self._columns.token_totals()[self._count] if self._columns is not None else 0
        return total + sum(m.token_estimate for m in self._tail)

    def objects(self) -> Iterator[Message]:
        """The messages kept as objects, in order: all but the plain (no tool calls, no
        metadata, no name) system, user and assistant messages of the columns — so every
        tool result and every tool call, without building the rest."""
        columns = self._columns
        if columns is not None:
            for index, message in columns.special.items():  # in index order (built so)
                if index >= self._count:
                    break
                yield message
        yield from self._tail

    def message_id(self, index: int) -> str:
        """The id of message ``index`` (negative counts from the end), without building it."""
        size = len(self)
        if index < 0:
            index += size
        if not 0 <= index < size:
            raise IndexError("message history index out of range")
        if index < self._count:
            assert self._columns is not None
            return self._columns.message_id(index)
        return self._tail[index - self._count].id

    def __len__(self) -> int:
        return self._count + len(self._tail)

    @overload
    def __getitem__(self, index: int) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...

    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if 0 <= index < self._count:
            assert self._columns is not None
            return self._columns.message(index)
        if index < 0:
            raise IndexError("message history index out of range")
        try:
            return self._tail[index - self._count]
        except IndexError:
            raise IndexError("message history index out of range") from None

    def __iter__(self) -> Iterator[Message]:
        columns = self._columns
        if columns is not None:
            message = columns.message
            for index in range(self._count):
                yield message(index)
        yield from self._tail

    def __bool__(self) -> bool:
        return self._count > 0 or bool(self._tail)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, MessageHistory):
            if (
                other._columns is self._columns
                and other._count == self._count
                and other._tail == self._tail
            ):
                return True
        elif not isinstance(other, list | tuple):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # compares by content, like a list

    def __add__(self, other: Iterable[Message]) -> list[Message]:
        return [*self, *other]

    def __radd__(self, other: Iterable[Message]) -> list[Message]:
        return [*other, *self]

    def __repr__(self) -> str:
        return f"MessageHistory({list(self)!r})"

    def __copy__(self) -> MessageHistory:
        return self.copy()

    def __reduce__(self) -> tuple[type[MessageHistory], tuple[list[Message]]]:
        # Pickled (and deep-copied) as the messages themselves: the columns' live-message
        # references are not to be shared with a copy.
        return MessageHistory, (list(self),)


class HistoryBuilder:
    """Builds a compact :class:`MessageHistory` message by message, or from a store's plain
    rows without making message objects first (how a chain is loaded).

    Example:
        >>> builder = HistoryBuilder()
        >>> builder.add_plain("user", "msg_1", "hi", 1_700_000_000_000_000)
        True
        >>> builder.build()[0].created_at.year
        2023
    """

    PLAIN_ROLES = frozenset(_ROLES)
    """The roles of the messages :meth:`add_plain` takes: ``system``, ``user``, ``assistant``."""

    __slots__ = ("_columns",)

    def __init__(self) -> None:
        self._columns = _Columns()

    def add_plain(self, role: str, message_id: str, content: str | None, micros: int) -> bool:
        """Add the message a plain stored row stands for — its id, role, content and
        creation time (microseconds since the epoch, UTC), every other field at its default,
        as the store builds it — without making it. ``content`` may be ``None`` for an
        ``assistant`` only. Returns ``False`` (nothing added) when the id does not fit the
        ids' column (another length, not ASCII): add that message with :meth:`add`."""
        return self._columns.add_plain(role, message_id, content, micros)

    def add(self, message: Message) -> None:
        """Add a message (kept in the columns when it is plain, else as it is; while it is
        alive, reading its position gives it)."""
        self._columns.add(message)

    def build(self) -> MessageHistory:
        """The history of the messages added (the builder is not to be used again)."""
        history = MessageHistory()
        if len(self._columns):
            history._columns, history._count = self._columns.freeze(), len(self._columns)
        return history

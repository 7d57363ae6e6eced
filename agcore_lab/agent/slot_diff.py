"""Compare two context slots message by message, the way a code review compares two files.

Two slots forked from one another share a prefix of the very same messages (a fork copies the
parent's list, and messages are immutable), so the comparison starts there: the *common prefix*
is the longest run of identical message ids from the start. After it, the two tails are aligned
with :class:`difflib.SequenceMatcher` over a key of each message (role, text, tool calls), which
gives rows of five kinds:

- ``shared`` — the common prefix (same message objects on both sides);
- ``equal`` — after the fork, a message with the same role, text and tool calls on both sides;
- ``changed`` — a pair the matcher replaced one for one; both sides carry a word-level diff;
- ``left_only`` / ``right_only`` — a message on one side only.

Example:
    >>> from agcore_lab.agent.slots import ContextSlot
    >>> from agcore_lab.llm.messages import UserMessage
    >>> main = ContextSlot("main", [UserMessage(content="hi")])
    >>> alt = main.fork("alt")
    >>> _ = main.extend([UserMessage(content="the sky is blue")])
    >>> _ = alt.extend([UserMessage(content="the sky is grey")])
    >>> diff = diff_slots(main, alt)
    >>> diff.fork_index, [row.kind for row in diff.rows]
    (1, ['shared', 'changed'])
    >>> diff.rows[1].right_segments
    (('equal', 'the sky is '), ('insert', 'grey'))

This module is pure Python (no Jupyter imports); ``agcore_lab.jupyter.SlotDiffViewer`` draws it.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, TypeAlias

from agcore_lab.llm.messages import AssistantMessage, Message

if TYPE_CHECKING:
    import pandas as pd

    from agcore_lab.agent.slots import ContextSlot

__all__ = [
    "DiffRow",
    "RowKind",
    "Segment",
    "SegmentOp",
    "SlotDiff",
    "common_prefix",
    "diff_slots",
    "tool_call_lines",
    "word_diff",
]

RowKind: TypeAlias = Literal["shared", "equal", "changed", "left_only", "right_only"]
SegmentOp: TypeAlias = Literal["equal", "insert", "delete"]
Segment: TypeAlias = tuple[SegmentOp, str]

ROW_KINDS: tuple[RowKind, ...] = ("shared", "equal", "changed", "left_only", "right_only")
# difflib is roughly quadratic; past this many tokens a changed pair is shown as a whole
# deletion and insertion instead of a word diff.
MAX_WORD_DIFF_TOKENS = 4000
_TOKEN = re.compile(r"\s+|[^\s]+")
_Key: TypeAlias = tuple[str, str, tuple[tuple[str, str], ...]]


def tool_call_lines(message: Message) -> tuple[str, ...]:
    """The message's tool calls as ``name({"arg": ...})`` lines (empty for other messages)."""
    if not isinstance(message, AssistantMessage):
        return ()
    return tuple(
        f"{call.name}({json.dumps(call.arguments, sort_keys=True, ensure_ascii=False)})"
        for call in message.tool_calls
    )


def _key(message: Message) -> _Key:
    # Tool-call ids are left out: a model numbers its calls, so the same call made in two
    # branches usually gets two ids.
    calls: tuple[tuple[str, str], ...] = ()
    if isinstance(message, AssistantMessage):
        calls = tuple(
            (call.name, json.dumps(call.arguments, sort_keys=True)) for call in message.tool_calls
        )
    return (message.role, message.text, calls)


def _merge(segments: list[Segment], op: SegmentOp, text: str) -> None:
    if not text:
        return
    if segments and segments[-1][0] == op:
        segments[-1] = (op, segments[-1][1] + text)
    else:
        segments.append((op, text))


def word_diff(left: str, right: str) -> tuple[tuple[Segment, ...], tuple[Segment, ...]]:
    """A word-level diff of two texts, as ``(op, text)`` segments for each side.

    Whitespace is kept: joining one side's segment texts gives that side's text back exactly.
    The left side has ``equal`` and ``delete`` segments, the right side ``equal`` and
    ``insert`` ones.

    Example:
        >>> left, right = word_diff("a b  c", "a x  c")
        >>> left
        (('equal', 'a '), ('delete', 'b'), ('equal', '  c'))
        >>> right
        (('equal', 'a '), ('insert', 'x'), ('equal', '  c'))
    """
    a, b = _TOKEN.findall(left), _TOKEN.findall(right)
    left_out: list[Segment] = []
    right_out: list[Segment] = []
    if len(a) + len(b) > MAX_WORD_DIFF_TOKENS:
        if left == right:
            return ((("equal", left),) if left else ()), ((("equal", right),) if right else ())
        _merge(left_out, "delete", left)
        _merge(right_out, "insert", right)
        return tuple(left_out), tuple(right_out)
    # Whitespace is "junk": it never starts a match on its own, only extends one.
    matcher = difflib.SequenceMatcher(lambda token: token.isspace(), a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        left_text, right_text = "".join(a[i1:i2]), "".join(b[j1:j2])
        if tag == "equal":
            _merge(left_out, "equal", left_text)
            _merge(right_out, "equal", right_text)
        else:
            _merge(left_out, "delete", left_text)
            _merge(right_out, "insert", right_text)
    return tuple(left_out), tuple(right_out)


@dataclass(frozen=True)
class DiffRow:
    """One row of a slot diff: a message on the left, on the right, or both.

    Attributes:
        kind: ``shared``, ``equal``, ``changed``, ``left_only`` or ``right_only``.
        left: The left slot's message (``None`` for ``right_only``).
        right: The right slot's message (``None`` for ``left_only``).
        left_index: The left message's position in its slot.
        right_index: The right message's position in its slot.
        left_segments: For ``changed`` rows, the left text as ``(op, text)`` segments.
        right_segments: For ``changed`` rows, the right text as ``(op, text)`` segments.
    """

    kind: RowKind
    left: Message | None = None
    right: Message | None = None
    left_index: int | None = None
    right_index: int | None = None
    left_segments: tuple[Segment, ...] = ()
    right_segments: tuple[Segment, ...] = ()

    @property
    def tool_calls_changed(self) -> bool:
        """For a ``changed`` row, whether the two messages' tool calls differ."""
        if self.left is None or self.right is None:
            return False
        return tool_call_lines(self.left) != tool_call_lines(self.right)


@dataclass(frozen=True)
class SlotDiff:
    """The aligned comparison of two slots (see :func:`diff_slots`).

    Attributes:
        left_slot_id: The left slot's name.
        right_slot_id: The right slot's name.
        rows: Every row, oldest first: the ``shared`` prefix, then the aligned tails.
        fork_index: The length of the common prefix (messages shared by id).
    """

    left_slot_id: str
    right_slot_id: str
    rows: tuple[DiffRow, ...]
    fork_index: int
    counts: dict[RowKind, int] = field(init=False)

    def __post_init__(self) -> None:
        counts: dict[RowKind, int] = dict.fromkeys(ROW_KINDS, 0)
        for row in self.rows:
            counts[row.kind] += 1
        object.__setattr__(self, "counts", counts)

    @property
    def tail(self) -> tuple[DiffRow, ...]:
        """The rows after the common prefix."""
        return self.rows[self.fork_index :]

    @property
    def identical(self) -> bool:
        """Whether both slots hold the same messages (by id or by content)."""
        return all(row.kind in ("shared", "equal") for row in self.rows)

    def summary(self) -> str:
        """One line: how many rows of each kind."""
        c = self.counts
        return (
            f"{self.left_slot_id!r} vs {self.right_slot_id!r}: {c['shared']} shared, "
            f"{c['equal']} equal, {c['changed']} changed, {c['left_only']} only left, "
            f"{c['right_only']} only right"
        )

    def __repr__(self) -> str:
        return f"SlotDiff({self.summary()})"

    def to_dataframe(self) -> pd.DataFrame:
        """The rows as a pandas DataFrame, one row per diff row.

        Columns: ``kind``, ``left_index``, ``right_index``, ``left_role``, ``right_role``,
        ``left_text``, ``right_text``, ``left_id``, ``right_id``.
        """
        import pandas as pd

        records = [
            {
                "kind": row.kind,
                "left_index": row.left_index,
                "right_index": row.right_index,
                "left_role": row.left.role if row.left is not None else None,
                "right_role": row.right.role if row.right is not None else None,
                "left_text": row.left.text if row.left is not None else None,
                "right_text": row.right.text if row.right is not None else None,
                "left_id": row.left.id if row.left is not None else None,
                "right_id": row.right.id if row.right is not None else None,
            }
            for row in self.rows
        ]
        columns = [
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
        frame = pd.DataFrame.from_records(records, columns=columns)
        for column in ("left_index", "right_index"):
            frame[column] = frame[column].astype("Int64")
        return frame


def common_prefix(left: Sequence[Message], right: Sequence[Message]) -> int:
    """The length of the longest common prefix of two histories, compared by message id."""
    n = 0
    for a, b in zip(left, right, strict=False):
        if a.id != b.id:
            break
        n += 1
    return n


def _aligned(left: Sequence[Message], right: Sequence[Message], start: int) -> Iterator[DiffRow]:
    a, b = left[start:], right[start:]
    matcher = difflib.SequenceMatcher(None, [_key(m) for m in a], [_key(m) for m in b], False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        paired = min(i2 - i1, j2 - j1) if tag == "replace" else 0
        if tag == "equal":
            for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                yield DiffRow("equal", a[i], b[j], start + i, start + j)
            continue
        for k in range(paired):
            i, j = i1 + k, j1 + k
            segments = word_diff(a[i].text, b[j].text)
            yield DiffRow("changed", a[i], b[j], start + i, start + j, *segments)
        for i in range(i1 + paired, i2):
            yield DiffRow("left_only", left=a[i], left_index=start + i)
        for j in range(j1 + paired, j2):
            yield DiffRow("right_only", right=b[j], right_index=start + j)


def diff_slots(left: ContextSlot, right: ContextSlot) -> SlotDiff:
    """Align two slots' histories and mark what differs.

    Args:
        left: One slot (in a merge view, the target).
        right: The other slot (in a merge view, the slot merged from).

    Returns:
        The :class:`SlotDiff`: ``shared`` rows for the common prefix (``fork_index`` of them),
        then ``equal``, ``changed``, ``left_only`` and ``right_only`` rows for the rest.
    """
    fork_index = common_prefix(left.messages, right.messages)
    rows = [
        DiffRow("shared", message, right.messages[i], i, i)
        for i, message in enumerate(left.messages[:fork_index])
    ]
    rows.extend(_aligned(left.messages, right.messages, fork_index))
    return SlotDiff(left.slot_id, right.slot_id, tuple(rows), fork_index)

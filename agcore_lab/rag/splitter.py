"""``RecursiveCharacterSplitter``: LangChain's recursive splitter, chunk for chunk, faster.

The promise is compatibility: with the same separators and sizes, :meth:`split_text` returns
exactly what LangChain's ``RecursiveCharacterTextSplitter`` (langchain-text-splitters 1.1.x,
``length_function=len``) returns, for each ``keep_separator`` mode. The algorithm:

1. Pick the first separator that occurs in the text (``""`` always "occurs": it splits
   between code points). The separators after it are the ones to recurse with.
2. Split on it. ``keep_separator="end"`` glues each separator to the piece before it,
   ``"start"`` (LangChain's ``True``) to the piece after it, ``False`` drops it (and the merge
   puts it back between pieces). Empty pieces are dropped.
3. Walk the pieces. Runs of pieces shorter than ``chunk_size`` are merged greedily into
   chunks of at most ``chunk_size``; when a chunk is full, pieces are dropped from its front
   until at most ``chunk_overlap`` remains and the next piece fits, and the rest start the
   next chunk. A piece of ``chunk_size`` or more is split again with the remaining separators
   (or kept whole when there are none).
4. Chunks are stripped of surrounding whitespace; empty ones are dropped.

This implementation works on offsets into the original text, not on piece strings. Where the
pieces tile the text (the separator is kept, or dropped with no two separators touching) the
merge is walked chunk by chunk, searching with ``str.rfind`` / ``str.find`` only near chunk
edges (:mod:`agcore_lab.rag._walk`); a long text of few pieces per chunk is instead merged
all at once from its split points, with numpy (:mod:`agcore_lab.rag._bulk`). Otherwise the
text is split once with ``str.split`` and merged with prefix sums and bisection. The ``""``
separator (one piece per code point) is a sliding window. That is what makes it faster, and it
also gives each chunk's exact ``start_index`` / ``end_index`` in the source (LangChain
searches for the chunk text instead).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from itertools import accumulate, repeat
from operator import add
from typing import Literal, NamedTuple

from pydantic import JsonValue

from agcore_lab.checks import check_text
from agcore_lab.errors import InvalidInputError
from agcore_lab.rag._bulk import bulk_pays, merge_bulk
from agcore_lab.rag._chunks import Chunks
from agcore_lab.rag._validate import check_count
from agcore_lab.rag._walk import (
    Walk,
    walk_dropped,
    walk_end,
    walk_start,
    walkable,
)
from agcore_lab.rag.documents import Document

__all__ = ["DEFAULT_SEPARATORS", "ChunkSpan", "KeepSeparator", "RecursiveCharacterSplitter"]

DEFAULT_SEPARATORS: tuple[str, ...] = ("\n\n", "\n", "。", "？", "！", ".", " ", "")
KeepSeparator = Literal["start", "end"] | bool


class ChunkSpan(NamedTuple):
    """One chunk and where it lies in the source text.

    ``text == source[start:end]`` in the ``"start"`` and ``"end"`` modes. With
    ``keep_separator=False`` the chunk is its pieces joined by one separator, so it differs
    from the source span where the source had a run of separators (``"a\\n\\n\\n\\nb"``).
    """

    number: int
    start: int
    end: int
    text: str


class RecursiveCharacterSplitter:
    """Split text into overlapping chunks at the most natural boundary that fits.

    Args:
        chunk_size: The longest chunk, in Unicode code points (an emoji counts 1).
        chunk_overlap: At most this many code points of a chunk are repeated at the start
            of the next one.
        separators: Tried in order; ``""`` (between any two code points) guarantees that
            no chunk exceeds ``chunk_size``. Separators are literal strings, not regexes.
        keep_separator: ``"end"`` (default: a separator stays with the text before it, so
            ``。`` and ``.`` end their sentence), ``"start"`` (LangChain's default ``True``),
            or ``False`` (separators dropped at chunk edges). ``True`` means ``"start"``.
        strip_whitespace: Strip whitespace around each chunk.

    Raises:
        InvalidInputError: ``chunk_size <= 0``, ``chunk_overlap < 0``,
            ``chunk_overlap > chunk_size``, or no separators.

    Example:
        >>> splitter = RecursiveCharacterSplitter(chunk_size=24, chunk_overlap=0)
        >>> splitter.split_text("Slots fork. Slots merge. Checkpoints travel in time.")
        ['Slots fork. Slots merge.', 'Checkpoints travel in', 'time.']

    Notes:
        Stateless after construction: safe to share between threads.
    """

    def __init__(
        self,
        chunk_size: int = 1000,
        chunk_overlap: int = 200,
        *,
        separators: Sequence[str] | None = None,
        keep_separator: KeepSeparator = "end",
        strip_whitespace: bool = True,
    ) -> None:
        check_count(chunk_size, "chunk_size")
        check_count(chunk_overlap, "chunk_overlap", minimum=0)
        if chunk_overlap > chunk_size:
            raise InvalidInputError(
                f"chunk_overlap ({chunk_overlap}) must not exceed chunk_size ({chunk_size})"
            )
        if separators is not None and (
            isinstance(separators, str) or not isinstance(separators, Iterable)
        ):
            raise InvalidInputError("separators must be a non-empty sequence of strings")
        seps = tuple(DEFAULT_SEPARATORS if separators is None else separators)
        if not seps or not all(isinstance(s, str) for s in seps):
            raise InvalidInputError("separators must be a non-empty sequence of strings")
        if keep_separator not in ("start", "end", True, False):
            raise InvalidInputError(
                f"keep_separator must be 'start', 'end', True or False, got {keep_separator!r}"
            )
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap
        self.separators = seps
        self.keep_separator: Literal["start", "end", False] = (
            "start" if keep_separator is True else keep_separator
        )
        self.strip_whitespace = strip_whitespace
        # How each separator's pieces are merged: walked chunk by chunk where possible.
        walk = {"end": walk_end, "start": walk_start, False: walk_dropped}[self.keep_separator]
        self._walkers: dict[str, Walk] = {sep: walk for sep in seps if sep and walkable(sep)}

    def __repr__(self) -> str:
        return (
            f"RecursiveCharacterSplitter(chunk_size={self.chunk_size}, "
            f"chunk_overlap={self.chunk_overlap}, separators={list(self.separators)!r}, "
            f"keep_separator={self.keep_separator!r}, strip_whitespace={self.strip_whitespace})"
        )

    # -- public API -------------------------------------------------------------------------

    def split_text(self, text: str) -> list[str]:
        """The chunks of ``text``, exactly as LangChain's ``split_text`` returns them."""
        check_text(text, "text")
        out = Chunks(spans=False)
        self._split(text, 0, self.separators, out)
        return out.texts

    def chunk_spans(self, text: str) -> list[ChunkSpan]:
        """The chunks of ``text`` with their spans in it, whitespace-only chunks left out.

        ``start`` / ``end`` bound the chunk's text in ``text`` (after stripping): the first
        and last of its characters are ``text[start]`` and ``text[end - 1]``. LangChain
        returns a whitespace-only chunk in two corner cases (``chunk_size=1``, or a piece of
        whitespace no separator can split); such chunks carry nothing and are left out here.
        """
        out = Chunks(spans=True)
        self._split(text, 0, self.separators, out)
        spans: list[ChunkSpan] = []
        for chunk, start, end in zip(out.texts, out.starts, out.ends, strict=True):
            if chunk.isspace():
                continue
            # A stripped chunk has no whitespace at its edges while its source span may; a
            # piece kept whole (too long, no separator left) is not stripped.
            if not chunk[0].isspace():
                raw = text[start:end]
                start += len(raw) - len(raw.lstrip())
            if not chunk[-1].isspace():
                end = start + len(text[start:end].rstrip())
            spans.append(ChunkSpan(len(spans), start, end, chunk))
        return spans

    def split(self, documents: Document | Iterable[Document]) -> list[Document]:
        """Split documents into chunk documents.

        Each chunk keeps its source's metadata and MIME type and adds ``source_id``,
        ``chunk_index``, ``chunk_count``, ``start_index`` and ``end_index`` (its span in the
        source text, see :meth:`chunk_spans`). Its id is ``"<source id>#<chunk index>"``.
        """
        docs = [documents] if isinstance(documents, Document) else list(documents)
        chunks: list[Document] = []
        for doc in docs:
            spans = self.chunk_spans(doc.content)
            for span in spans:
                metadata: dict[str, JsonValue] = dict(doc.metadata)
                metadata.update(
                    source_id=doc.id,
                    chunk_index=span.number,
                    chunk_count=len(spans),
                    start_index=span.start,
                    end_index=span.end,
                )
                chunks.append(
                    Document.trusted(f"{doc.id}#{span.number}", span.text, metadata, doc.mime_type)
                )
        return chunks

    # -- the algorithm ----------------------------------------------------------------------

    def _split(self, text: str, base: int, separators: tuple[str, ...], out: Chunks) -> None:
        """Append the chunks of ``text`` (found at ``base`` in the source) to ``out``."""
        separator = separators[-1]
        rest: tuple[str, ...] = ()
        for i, candidate in enumerate(separators):
            if not candidate:
                separator = ""
                break
            if candidate in text:
                separator = candidate
                rest = separators[i + 1 :]
                break
        if not separator:
            self._windows(text, base, out)
            return
        if bulk_pays(text, separator, self.chunk_size) and merge_bulk(
            text, separator, rest, base, out, self, self.keep_separator
        ):
            return
        walk = self._walkers.get(separator)
        if walk is None or not walk(text, separator, rest, base, out, self):
            self._split_eager(text, base, separator, rest, out)

    def long_piece(
        self, text: str, base: int, start: int, end: int, rest: tuple[str, ...], out: Chunks
    ) -> None:
        """A piece of ``chunk_size`` or more: split it further, or keep it whole."""
        piece = text[start:end]
        if rest:
            self._split(piece, base + start, rest, out)
        else:
            out.add(piece, base + start, base + end)

    def _split_eager(
        self, text: str, base: int, separator: str, rest: tuple[str, ...], out: Chunks
    ) -> None:
        """The merge over all pieces at once (any separator, any ``keep_separator``).

        Pieces are described by ``offsets``: piece ``i`` starts at ``offsets[i]``, and
        ``offsets[e] - offsets[f]`` is the length of pieces ``f .. e-1`` merged (with
        ``keep_separator=False``, each piece counts its separator, which the merge puts back
        between pieces; ``gap`` takes the last one off again).
        """
        parts = text.split(separator)
        sep_len = len(separator)
        size, overlap, strip = self.chunk_size, self.chunk_overlap, self.strip_whitespace
        keep = self.keep_separator
        pieces: list[str] = []  # set when pieces must be joined instead of sliced
        starts: list[int] = []
        gap = 0
        if keep == "end":  # pieces: parts[i] + separator, ..., parts[-1]
            offsets = list(accumulate(map(add, map(len, parts), repeat(sep_len)), initial=0))
            offsets[-1] -= sep_len
            if offsets[-1] == offsets[-2]:
                offsets.pop()
        elif keep == "start":  # pieces: parts[0], separator + parts[i], ...
            offsets = list(accumulate(map(add, map(len, parts), repeat(sep_len)), initial=-sep_len))
            offsets[0] = 0
            if offsets[1] == 0:
                del offsets[0]
        else:
            gap = sep_len
            if "" in parts:  # runs of separators: drop the empty parts, join when merging
                starts = list(accumulate(map(add, map(len, parts), repeat(sep_len)), initial=0))
                starts = [s for s, p in zip(starts, parts, strict=False) if p]
                pieces = [p for p in parts if p]
                parts = pieces
            offsets = list(accumulate(map(add, map(len, parts), repeat(sep_len)), initial=0))
        count = len(offsets) - 1

        longs: list[int] = []
        if max(map(len, parts), default=0) + sep_len >= size:
            longs = [j for j in range(count) if offsets[j + 1] - offsets[j] - gap >= size]
        longs.append(count)
        first = 0
        reach = size + gap
        for long in longs:
            # Merge the run of short pieces first .. long-1: a chunk from piece f runs to the
            # last e with offsets[e] <= offsets[f] + reach; the next starts at the first piece
            # after which at most `overlap` remains and piece e fits.
            while first < long:
                end = bisect_right(offsets, offsets[first] + reach, first, long + 1) - 1
                if pieces:
                    raw_start = starts[first]
                    raw_end = starts[end - 1] + len(pieces[end - 1])
                    chunk = separator.join(pieces[first:end])
                else:
                    raw_start, raw_end = offsets[first], offsets[end] - gap
                    chunk = text[raw_start:raw_end]
                if strip:
                    chunk = chunk.strip()
                if chunk:
                    out.add(chunk, base + raw_start, base + raw_end)
                if end >= long:
                    break
                floor = max(offsets[end] - overlap, offsets[end + 1] - size) - gap
                first = bisect_left(offsets, floor, first, end)
            if long == count:
                return
            first = long + 1
            start = starts[long] if pieces else offsets[long]
            length = offsets[long + 1] - offsets[long] - gap
            self.long_piece(text, base, start, start + length, rest, out)

    def _windows(self, text: str, base: int, out: Chunks) -> None:
        """The ``""`` separator: every code point is a piece of length 1, so the merge is a
        window of ``chunk_size`` sliding by ``chunk_size - min(overlap, chunk_size - 1)``."""
        size, n = self.chunk_size, len(text)
        if size == 1:  # no piece is shorter than the chunk size: each is kept as it is
            out.texts.extend(text)
            if out.spans:
                out.starts.extend(range(base, base + n))
                out.ends.extend(range(base + 1, base + n + 1))
            return
        step = size - min(self.chunk_overlap, size - 1)
        strip = self.strip_whitespace
        start = 0
        while True:
            chunk = text[start : start + size]
            if strip:
                chunk = chunk.strip()
            if chunk:
                out.add(chunk, base + start, base + min(start + size, n))
            if start + size >= n:
                return
            start += step

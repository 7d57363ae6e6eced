"""The chunk-by-chunk merge of ``RecursiveCharacterSplitter``.

LangChain splits a text into pieces at every separator, then merges the pieces one by one. When
the pieces tile the text (the separator is kept at their end or start; or it is dropped and no
two separators touch, so merged pieces are joined by exactly the separator between them), a
chunk is a slice between two split points ("boundaries") and the merge can be walked one chunk
at a time:

* a chunk from boundary ``f`` ends at the last boundary ``e <= f + chunk_size`` (one
  ``rfind``), unless the piece at ``f`` is ``chunk_size`` or longer (then it is split further);
* the next chunk starts at the first boundary at or after
  ``max(e - chunk_overlap, p - chunk_size)``, where ``p`` ends the piece after ``e``. Usually
  that piece fits, and the start is the first boundary at or after ``e - chunk_overlap`` (one
  ``find`` over the overlap). The guess is checked by the next ``rfind``: if the chunk from it
  does not get past ``e``, the piece did not fit and the start is computed exactly.

Only the text near chunk edges is searched, and no piece strings are made. Searching from an
arbitrary position is only right when every occurrence of the separator is a split point:
:class:`RunSearch` corrects the one common exception, a separator such as ``"\\n\\n"`` inside a
longer run of its character.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Protocol

from agcore_lab.rag._chunks import Chunks

__all__ = [
    "RunSearch",
    "Walk",
    "dropped_bounds",
    "walk_dropped",
    "walk_end",
    "walk_start",
    "walkable",
]


class Splitter(Protocol):
    """What a walk needs from the splitter."""

    chunk_size: int
    chunk_overlap: int
    strip_whitespace: bool

    def long_piece(
        self, text: str, base: int, start: int, end: int, rest: tuple[str, ...], out: Chunks
    ) -> None:
        """Split a piece of ``chunk_size`` or more further (or keep it whole)."""


# A walk returns False when it cannot handle the text (the caller then splits it eagerly).
Walk = Callable[[str, str, tuple[str, ...], int, Chunks, Splitter], bool]


def walkable(separator: str) -> bool:
    """Whether the walk can search for ``separator`` from any position.

    Occurrences can overlap only when the separator has a border (a proper prefix equal to a
    suffix). A run of one character (``"\\n\\n"``) is corrected by :class:`RunSearch`; other
    bordered separators (``"abab"``) are left to the full split.
    """
    m = len(separator)
    bordered = any(separator[:i] == separator[m - i :] for i in range(1, m))
    return not bordered or separator == separator[0] * m


def walk_end(
    text: str, sep: str, rest: tuple[str, ...], base: int, out: Chunks, splitter: Splitter
) -> bool:
    """Merge ``text`` split on ``sep`` with the separator kept at the end of each piece.

    Boundaries are 0, the end of each separator, and ``len(text)``. Chunks are appended to
    ``out`` with spans offset by ``base``; each piece of ``chunk_size`` or more goes to
    ``splitter.long_piece``, in order with the chunks.
    """
    n, m = len(text), len(sep)
    size, overlap = splitter.chunk_size, splitter.chunk_overlap
    strip, long_piece = splitter.strip_whitespace, splitter.long_piece
    find, rfind, append = text.find, text.rfind, out.texts.append
    spans, add_start, add_end = out.spans, out.starts.append, out.ends.append
    char = sep[0] if m > 1 and sep == sep[0] * m else ""  # "": occurrences never overlap
    runs = RunSearch(text, sep) if char else _NO_RUNS
    trim = m if strip and sep.isspace() else 0  # a trailing separator would be stripped
    first = 0
    carried = -1  # the previous chunk's end while `first` is a guessed overlap start
    while first < n:
        limit = first + size
        if limit >= n:
            end = stop = n
        else:
            k = rfind(sep, first, limit)
            if char and k > 0 and text[k - 1] == char:
                k = runs.rfind(first, limit, k)
            end = k + m if k >= 0 else -1
            stop = end - trim
        if carried >= 0:
            if end <= carried:  # the piece after the previous chunk does not fit: exact start
                k = find(sep, carried)
                piece_end = k + m if k >= 0 else n
                if piece_end - carried >= size:
                    first = carried  # a long piece: the next round splits it
                else:
                    floor = carried - overlap
                    if piece_end - size > floor:
                        floor = piece_end - size
                    k = find(sep, floor - m if floor - m > first else first, carried)
                    if char and k > 0 and text[k - 1] == char:
                        k = runs.find(carried, k)
                    first = k + m if k >= 0 else carried
                carried = -1
                continue
            carried = -1
        elif end < 0 or (end - first == size and find(sep, first, end - 1) < 0):
            # The piece at `first` reaches chunk_size: split it on its own.
            if end < 0:
                k = find(sep, first)
                end = k + m if k >= 0 else n
            long_piece(text, base, first, end, rest, out)
            first = end
            continue
        chunk = text[first:stop]
        if strip:
            chunk = chunk.strip()
        if chunk:
            append(chunk)
            if spans:
                add_start(base + first)
                add_end(base + end)
        if end >= n or not overlap:
            first = end
            continue
        floor = end - overlap - m
        k = find(sep, floor if floor > first else first, end)
        if char and k > 0 and text[k - 1] == char:
            k = runs.find(end, k)
        if 0 <= k < end - m:
            first, carried = k + m, end
        else:
            first = end
    return True


def walk_start(
    text: str, sep: str, rest: tuple[str, ...], base: int, out: Chunks, splitter: Splitter
) -> bool:
    """As :func:`walk_end`, with the separator kept at the start of each piece.

    Boundaries are 0, the start of each separator, and ``len(text)``. Every boundary past 0
    is the start of a separator, so the piece there ends at the next separator after it.
    """
    n, m = len(text), len(sep)
    size, overlap = splitter.chunk_size, splitter.chunk_overlap
    strip, long_piece = splitter.strip_whitespace, splitter.long_piece
    find, rfind, append = text.find, text.rfind, out.texts.append
    spans, add_start, add_end = out.spans, out.starts.append, out.ends.append
    char = sep[0] if m > 1 and sep == sep[0] * m else ""
    runs = RunSearch(text, sep) if char else _NO_RUNS
    trim = m if strip and sep.isspace() else 0  # a leading separator would be stripped
    at_zero = m if text.startswith(sep) else 0  # where the piece at 0 looks for its end
    first = 0
    carried = -1
    while first < n:
        limit = first + size
        if limit >= n:
            end = n
        else:
            end = rfind(sep, first + 1, limit + m)
            if char and end > 0 and text[end - 1] == char:
                end = runs.rfind(first + 1, limit + m, end)
        if carried >= 0:
            if end <= carried:
                k = find(sep, carried + m)
                piece_end = k if k >= 0 else n
                if piece_end - carried >= size:
                    first = carried
                else:
                    floor = carried - overlap
                    if piece_end - size > floor:
                        floor = piece_end - size
                    k = find(sep, floor if floor > first else first + 1, carried + m)
                    if char and text[k - 1] == char:
                        k = runs.find(carried + m, k)
                    first = k
                carried = -1
                continue
            carried = -1
        elif end < 0 or (
            end - first == size and find(sep, first + m if first else at_zero, end + m - 1) < 0
        ):
            if end < 0:
                k = find(sep, first + m if first else at_zero)
                end = k if k >= 0 else n
            long_piece(text, base, first, end, rest, out)
            first = end
            continue
        chunk = text[first + trim if first else 0 : end]
        if strip:
            chunk = chunk.strip()
        if chunk:
            append(chunk)
            if spans:
                add_start(base + first)
                add_end(base + end)
        if end >= n or not overlap:
            first = end
            continue
        floor = end - overlap
        k = find(sep, floor if floor > first else first + 1, end + m)
        if char and text[k - 1] == char:
            k = runs.find(end + m, k)
        if k < end:
            carried = end
        first = k
    return True


def walk_dropped(
    text: str, sep: str, rest: tuple[str, ...], base: int, out: Chunks, splitter: Splitter
) -> bool:
    """As :func:`walk_end`, for ``keep_separator=False``: separators are not part of pieces.

    A piece runs from the end of one separator to the start of the next; merged pieces are
    joined by one separator, which is the source text between them as long as no piece is
    empty (a separator at either end only drops a piece there); otherwise it returns False.
    Boundaries where chunks end are the starts of separators (and the end of the last piece);
    chunks start at the ends of separators.
    """
    bounds = dropped_bounds(text, sep)
    if bounds is None:
        return False
    first, n = bounds
    m = len(sep)
    size, overlap = splitter.chunk_size, splitter.chunk_overlap
    strip, long_piece = splitter.strip_whitespace, splitter.long_piece
    find, rfind, append = text.find, text.rfind, out.texts.append
    spans, add_start, add_end = out.spans, out.starts.append, out.ends.append
    char = sep[0] if m > 1 and sep == sep[0] * m else ""
    runs = RunSearch(text, sep) if char else _NO_RUNS
    # `first` is always the start of a piece; `n` the end of the last one.
    carried = -1
    while first < n:
        limit = first + size
        if limit >= n:
            end = n
        else:
            end = rfind(sep, first + 1, limit + m)
            if char and end > 0 and text[end - 1] == char:
                end = runs.rfind(first + 1, limit + m, end)
        if carried >= 0:
            if end <= carried:  # the piece after the previous chunk does not fit: exact start
                k = find(sep, carried + m)
                piece_end = k if k >= 0 else n
                if piece_end - carried - m >= size:
                    first = carried + m
                else:
                    floor = carried - overlap
                    if piece_end - size > floor:
                        floor = piece_end - size
                    k = find(sep, floor - m if floor - m > first else first, carried + m)
                    if char and text[k - 1] == char:
                        k = runs.find(carried + m, k)
                    first = k + m
                carried = -1
                continue
            carried = -1
        elif end < 0 or (end - first == size and find(sep, first, end + m - 1) < 0):
            if end < 0:
                k = find(sep, first)
                end = k if k >= 0 else n
            long_piece(text, base, first, end, rest, out)
            first = end + m
            continue
        chunk = text[first:end]
        if strip:
            chunk = chunk.strip()
        if chunk:
            append(chunk)
            if spans:
                add_start(base + first)
                add_end(base + end)
        if end >= n:
            break
        if overlap:
            floor = end - overlap - m
            k = find(sep, floor if floor > first else first, end + m)
            if char and text[k - 1] == char:
                k = runs.find(end + m, k)
            if k < end:
                carried = end
            first = k + m
        else:
            first = end + m
    return True


def dropped_bounds(text: str, sep: str) -> tuple[int, int] | None:
    """Where the first piece starts and the last one ends when ``text`` is split on ``sep``
    with the separators dropped, or ``None`` if two separators touch (an empty piece inside).

    A separator at the start or the end only makes an empty first or last piece, which is
    dropped: the bounds leave it out.
    """
    if _pair(sep)(text):
        return None
    n, m = len(text), len(sep)
    start = m if text.startswith(sep) else 0
    end = n
    if text.endswith(sep):
        char = sep[0] if m > 1 and sep == sep[0] * m else ""
        run = m
        if char:  # a run of c longer than c * m ends with a piece of the leftover c's
            while run < n and text[n - run - 1] == char:
                run += 1
        if run == m:
            end = n - m
    return start, max(start, end)


@functools.cache
def _pair(sep: str) -> Callable[[str], object]:
    """A search for two ``sep`` in a row: ``re`` finds a literal about a third faster than
    ``in`` in texts with wide characters (this scan is a good part of the whole walk)."""
    return re.compile(re.escape(sep + sep)).search


class RunSearch:
    """Fix-ups for a separator made of one character repeated, ``c * m`` (``"\\n\\n"``).

    In a run of ``c`` longer than ``m``, occurrences overlap; the split takes those at
    ``run start + j * m``. ``str.find`` / ``str.rfind`` may return another one, but only an
    occurrence ``k`` with ``text[k - 1] == c``; for it, these methods return the split point
    the search should have found. ``char`` is ``c`` for such separators and ``""`` for all
    others, which need no fix-up.
    """

    __slots__ = ("char", "known", "sep", "text")

    def __init__(self, text: str, sep: str) -> None:
        m = len(sep)
        self.text, self.sep = text, sep
        self.char = sep[0] if m > 1 and sep == sep[0] * m else ""
        self.known = (0, 0)  # (a run's start, a later position in it): walks back stop there

    def _run_start(self, k: int) -> int:
        text, char = self.text, self.char
        start, seen = self.known
        j = k
        while j > 0 and text[j - 1] == char:
            if j == seen and start < seen:
                j = start
                break
            j -= 1
        self.known = (j, k)
        return j

    def find(self, hi: int, k: int) -> int:
        """The first split point at or after occurrence ``k`` whose separator ends by ``hi``
        (-1 if none)."""
        text, sep, m = self.text, self.sep, len(self.sep)
        start = self._run_start(k)
        aligned = start - (start - k) // m * m
        if text.startswith(sep, aligned, hi):
            return aligned
        # No split point of this run is in range; the next run's first one is its start.
        end = aligned
        while end < len(text) and text[end] == self.char:
            end += 1
        return text.find(sep, end, hi)

    def rfind(self, lo: int, hi: int, k: int) -> int:
        """The last split point at or after ``lo`` and at or before occurrence ``k``, which
        ``rfind(sep, lo, hi)`` returned (-1 if none)."""
        text, sep, m = self.text, self.sep, len(self.sep)
        while True:
            start = self._run_start(k)
            aligned = start + (k - start) // m * m
            if aligned >= lo:
                return aligned
            k = text.rfind(sep, lo, start)
            if k < 0:
                return k


_NO_RUNS = RunSearch("", " ")  # stands in where no fix-up is ever asked for

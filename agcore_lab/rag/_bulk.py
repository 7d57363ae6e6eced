"""The merge of ``RecursiveCharacterSplitter`` over a long text: every split point at once.

The walk (:mod:`agcore_lab.rag._walk`) searches near chunk edges and pays a Python loop of a
dozen steps per chunk. On a long text whose chunks hold only a few pieces (1,000-character
chunks of paragraphs), that loop is most of the time. Here the split points are found in one
regex pass (``finditer``: the same left-to-right, non-overlapping occurrences as
``str.split`` and LangChain's ``re.split``), and the merge rules of
:meth:`RecursiveCharacterSplitter._split_eager` are applied to all pieces at once with numpy:

* ``offsets[i]`` is where piece ``i`` starts (``offsets[count]`` closes the last one), and
  ``offsets[e] - offsets[f] - gap`` is the length of pieces ``f .. e-1`` merged; ``gap`` is
  the separator's length when it is dropped (the merge puts it back between pieces), else 0;
* the chunk from piece ``f`` runs to the last ``e`` with ``offsets[e] <= offsets[f] + size +
  gap``, never past the next piece of ``chunk_size`` or more (a "long" piece, split further);
* the next chunk starts at the first piece ``f' >= f`` with ``offsets[f'] >= max(offsets[e]
  - overlap, offsets[e + 1] - size) - gap``.

What is left for Python is one step per chunk: slice, strip, append, jump to the next start.
The numbers it reads are ``array("q")`` (an int object is made only for the pieces it
visits), and the chunks go straight into :class:`~agcore_lab.rag._chunks.Chunks` (their spans
only when asked for). The two searches of every piece's chunk end and next start are one
linear merge each (:func:`_ranks`), as both sides are sorted.
With ``keep_separator=False`` and two separators touching (an empty piece inside), chunks are
pieces joined rather than slices of the text; :func:`merge_bulk` then returns False and the
splitter takes its eager path.

On the benchmark's 3 MB at (1000, 200) the time goes to the regex pass (about a third: the
scan, and a match object per split point), the chunk strings (another third: each copied, and
narrowed to one byte per character where it is ASCII), and the rest: numpy, the Python step
per chunk, the long pieces split further.
"""

from __future__ import annotations

import functools
import re
from array import array
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Literal

from agcore_lab.rag._chunks import Chunks
from agcore_lab.rag._walk import Splitter

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["BULK_MAX_PIECES", "BULK_MIN_CHUNKS", "bulk_pays", "merge_bulk"]

BULK_MIN_CHUNKS = 32
"""A text shorter than this many chunk sizes is walked (numpy's fixed costs would dominate)."""
BULK_MAX_PIECES = 4
"""More pieces than this per ``chunk_size`` of text (sampled at its start): walked, as the
walk's cost is per chunk and the bulk merge's per piece."""
_SAMPLE = 16  # chunk sizes of text sampled
_START = re.Match.start


@functools.cache
def _finditer(sep: str) -> Callable[[str], Iterator[re.Match[str]]]:
    return re.compile(re.escape(sep)).finditer


def bulk_pays(text: str, sep: str, size: int) -> bool:
    """Whether ``text`` is long enough, and its pieces big enough, for :func:`merge_bulk`."""
    if len(text) < BULK_MIN_CHUNKS * size:
        return False
    return text.count(sep, 0, _SAMPLE * size) <= BULK_MAX_PIECES * _SAMPLE


def merge_bulk(
    text: str,
    sep: str,
    rest: tuple[str, ...],
    base: int,
    out: Chunks,
    splitter: Splitter,
    keep: Literal["start", "end", False],
) -> bool:
    """Merge ``text`` split on ``sep``, appending chunks to ``out``.

    Spans are offset by ``base``; each piece of ``chunk_size`` or more goes to
    ``splitter.long_piece``, in order with the chunks. Returns False, having appended nothing,
    when ``sep`` does not occur, or ``keep`` is False and two separators touch.
    """
    import numpy as np

    found = _boundaries(text, sep, keep)
    if found is None:
        return False
    offsets, gap = found
    count = offsets.size - 1
    if count <= 0:  # the text is one separator
        return True
    size, overlap = splitter.chunk_size, splitter.chunk_overlap
    firsts = offsets[:-1]
    lengths = offsets[1:] - firsts
    if gap:
        lengths -= gap
    long_at = np.flatnonzero(lengths >= size)
    # The chunk from piece f ends at boundary `end`: the last within reach, but never past
    # the end of f's run of short pieces (the next long piece, or `count`).
    end = _ranks(offsets, firsts + (size + gap), ties_first=True)
    end -= 1
    run_end = np.append(long_at, count)[np.searchsorted(long_at, np.arange(count))]
    np.minimum(end, run_end, out=end)
    # The next chunk starts at the first boundary at or after `floor`; that is past f, as the
    # piece at `end` did not fit. (The padding makes `end + 1` an index when end == count.)
    # `end` never decreases from one piece to the next, so neither does `floor`.
    at_end = offsets[end]
    floor = np.append(offsets, 0)[end + 1]
    floor -= size
    np.maximum(floor, at_end - overlap, out=floor)
    if gap:
        floor -= gap
    following = _ranks(offsets, floor, ties_first=False)
    # A chunk that reaches the end of its run is followed by the long piece (or nothing).
    np.copyto(following, end, where=end >= run_end)
    if gap:
        at_end -= gap
    at_end[long_at] = -1  # a long piece: split further
    # As arrays, not lists: an int object is made only for the pieces the walk visits.
    jumps, chunk_ends, piece_starts = _ints(following), _ints(at_end), _ints(firsts)
    spans = out.spans
    # Spans in the source: the same numbers at the top level (base 0), else shifted.
    span_starts = _ints(firsts + base) if spans and base else piece_starts
    span_ends = _ints(at_end + base) if spans and base else chunk_ends
    long_piece, append = splitter.long_piece, out.texts.append
    add_start, add_end = out.starts.append, out.ends.append
    strip = str.strip if splitter.strip_whitespace else str
    first = 0
    while first < count:
        stop = chunk_ends[first]
        if stop < 0:
            start = piece_starts[first]
            long_piece(text, base, start, start + int(lengths[first]), rest, out)
            first += 1
            continue
        chunk = strip(text[piece_starts[first] : stop])
        if chunk:
            append(chunk)
            if spans:
                add_start(span_starts[first])
                add_end(span_ends[first])
        first = jumps[first]
    return True


def _ranks(
    sorted_: npt.NDArray[np.int64], keys: npt.NDArray[np.int64], *, ties_first: bool
) -> npt.NDArray[np.int64]:
    """``np.searchsorted(sorted_, keys, side="right" if ties_first else "left")`` for keys
    that never decrease, in linear time: a stable sort of the two sorted runs is one merge
    (numpy's timsort finds the runs), about 3x faster than a binary search per key.

    ``ties_first``: an item of ``sorted_`` equal to a key counts as before it.
    """
    import numpy as np

    if ties_first:
        order = np.concatenate((sorted_, keys)).argsort(kind="stable")
        landed = np.flatnonzero(order >= sorted_.size)
    else:
        order = np.concatenate((keys, sorted_)).argsort(kind="stable")
        landed = np.flatnonzero(order < keys.size)
    # Where each key landed in the merge, less the keys before it.
    landed -= np.arange(keys.size)
    return landed


def _ints(values: npt.NDArray[np.int64]) -> array[int]:
    """``values`` as an ``array("q")``: copied in one go, each item an int when read."""
    ints = array("q")
    ints.frombytes(values.data.cast("B"))
    return ints


def _boundaries(
    text: str, sep: str, keep: Literal["start", "end", False]
) -> tuple[npt.NDArray[np.int64], int] | None:
    """``(offsets, gap)``: piece ``i`` of ``text`` split on ``sep`` starts at ``offsets[i]``
    and ends at ``offsets[i + 1] - gap``; ``None`` if ``sep`` does not occur, or ``keep`` is
    False and two separators touch (an empty piece inside, left to the eager split).

    The offsets are 0, a boundary at each separator and ``len(text) + gap``, less the empty
    piece at either end (a separator there).
    """
    import numpy as np

    n, m = len(text), len(sep)
    points = np.fromiter(map(_START, _finditer(sep)(text)), dtype=np.int64)
    if not points.size:  # the last separator, tried although it does not occur
        return None
    gap = 0
    offsets = np.empty(points.size + 2, dtype=np.int64)
    offsets[0] = 0
    if keep == "end":  # pieces: text up to and including each separator, then the rest
        np.add(points, m, out=offsets[1:-1])
        offsets[-1] = n
        first_empty, last_empty = False, points[-1] + m == n
    elif keep == "start":  # pieces: text up to each separator, which starts the next one
        offsets[1:-1] = points
        offsets[-1] = n
        first_empty, last_empty = points[0] == 0, False
    else:  # pieces: the text between separators
        if points.size > 1 and (np.diff(points) == m).any():
            return None
        gap = m
        np.add(points, m, out=offsets[1:-1])
        offsets[-1] = n + m
        first_empty, last_empty = points[0] == 0, points[-1] + m == n
    if first_empty or last_empty:
        offsets = offsets[int(first_empty) : offsets.size - int(last_empty)]
    return offsets, gap

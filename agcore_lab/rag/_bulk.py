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
With ``keep_separator=False`` and two separators touching (an empty piece inside), chunks are
pieces joined rather than slices of the text; :func:`merge_bulk` then returns False and the
splitter takes its eager path.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from typing import Literal

from agcore_lab.rag._walk import Raw, Splitter

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
    out: list[Raw],
    splitter: Splitter,
    keep: Literal["start", "end", False],
) -> bool:
    """Merge ``text`` split on ``sep``, appending chunks to ``out``.

    Spans are offset by ``base``; each piece of ``chunk_size`` or more goes to
    ``splitter.long_piece``, in order with the chunks. Returns False, having appended nothing,
    when ``sep`` does not occur, or ``keep`` is False and two separators touch.
    """
    import numpy as np

    n, m = len(text), len(sep)
    points = np.fromiter(map(_START, _finditer(sep)(text)), dtype=np.int64)
    if not points.size:  # the last separator, tried although it does not occur
        return False
    gap = 0
    if keep == "end":  # pieces: text up to and including each separator, then the rest
        offsets = np.concatenate(([0], points + m, [n]))
        if offsets[-1] == offsets[-2]:
            offsets = offsets[:-1]
    elif keep == "start":  # pieces: text up to each separator, which starts the next one
        offsets = np.concatenate(([0], points, [n]))
        if points[0] == 0:
            offsets = offsets[1:]
    else:  # pieces: the text between separators; an empty one is dropped
        if points.size > 1 and (np.diff(points) == m).any():
            return False
        gap = m
        starts = np.concatenate(([0], points + m))
        ends = np.concatenate((points, [n]))
        kept = ends > starts  # only the first and the last piece can be empty here
        starts, ends = starts[kept], ends[kept]
        if not starts.size:
            return True
        offsets = np.append(starts, ends[-1] + m)
    count = offsets.size - 1
    size, overlap = splitter.chunk_size, splitter.chunk_overlap
    firsts = offsets[:-1]
    lengths = offsets[1:] - firsts - gap
    is_long = lengths >= size
    pieces = np.arange(count)
    # For each piece: the next long piece at or after it (or `count`), where its run ends.
    longs = np.append(np.flatnonzero(is_long), count)
    run_end = longs[np.searchsorted(longs, pieces)]
    end = np.minimum(np.searchsorted(offsets, firsts + (size + gap), side="right") - 1, run_end)
    after = offsets[np.minimum(end + 1, count)]
    floor = np.maximum(offsets[end] - overlap, after - size) - gap
    following = np.maximum(np.searchsorted(offsets, floor), pieces)
    # A chunk that reaches the end of its run is followed by the long piece (or nothing).
    jumps = np.where(end < run_end, following, end).tolist()
    stops = offsets[end] - gap
    stops[is_long] = -1  # a long piece: split further
    chunk_ends = stops.tolist()
    piece_starts = firsts.tolist()
    # Spans in the source: the same numbers at the top level (base 0), else shifted.
    span_starts = (firsts + base).tolist() if base else piece_starts
    span_ends = (stops + base).tolist() if base else chunk_ends
    long_piece, append = splitter.long_piece, out.append
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
            append((chunk, span_starts[first], span_ends[first]))
        first = jumps[first]
    return True

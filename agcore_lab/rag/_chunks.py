"""Where the merges of ``RecursiveCharacterSplitter`` put the chunks they cut.

A split appends thousands of chunks; one ``(text, start, end)`` tuple each was a tenth of the
time of a long split (allocated, tracked by the garbage collector, unpacked again and freed).
So the chunks go into parallel lists, and the spans only when they are asked for:
:meth:`~agcore_lab.rag.splitter.RecursiveCharacterSplitter.split_text` returns ``texts`` as
it is, :meth:`~agcore_lab.rag.splitter.RecursiveCharacterSplitter.chunk_spans` reads all three.
"""

from __future__ import annotations

__all__ = ["Chunks"]


class Chunks:
    """The chunks of one split, in order, and (if ``spans``) where each was cut from.

    ``texts[i]`` is a chunk; when ``spans`` is true, it was cut from
    ``source[starts[i]:ends[i]]`` (before stripping). When ``spans`` is false, ``starts`` and
    ``ends`` stay empty.

    Example:
        >>> chunks = Chunks(spans=True)
        >>> chunks.add("fork", 0, 4)
        >>> chunks.texts, chunks.starts, chunks.ends
        (['fork'], [0], [4])
    """

    __slots__ = ("ends", "spans", "starts", "texts")

    def __init__(self, *, spans: bool) -> None:
        self.texts: list[str] = []
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.spans = spans

    def add(self, text: str, start: int, end: int) -> None:
        """Append one chunk (the merges' inner loops append to the lists directly)."""
        self.texts.append(text)
        if self.spans:
            self.starts.append(start)
            self.ends.append(end)

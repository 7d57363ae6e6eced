"""``%agcore chunks VAR``: open a :class:`ChunkInspector` on a variable of the notebook.

``VAR`` holds a string or a :class:`~agcore_lab.rag.documents.Document`; ``--size`` and
``--overlap`` set the starting chunk size and overlap. :func:`chunks_command` builds the
inspector and returns it; the magic displays it.
"""

from __future__ import annotations

from typing import Any

from IPython.core.magic_arguments import argument

from agcore_lab.jupyter._magic_args import CommandError, command, parse
from agcore_lab.jupyter.chunks.inspector import ChunkInspector
from agcore_lab.rag.documents import Document

__all__ = ["CHUNKS_HELP", "chunks_command"]

CHUNKS_HELP = """\
  %agcore chunks VAR  inspect how the text (or Document) in VAR is split into chunks:
                      sliders for size and overlap, separators, a table and a histogram
                      [--size N (1000)] [--overlap N (size / 5)] [--keep end|start|none]"""

_CHUNKS = command(
    "chunks",
    "Inspect how a text or Document is split into chunks.",
    argument("var", help="a variable holding a str or a Document"),
    argument("--size", type=int, default=1000, help="the starting chunk size"),
    argument("--overlap", type=int, default=None, help="the starting overlap (default: size / 5)"),
    argument("--keep", default="end", choices=["end", "start", "none"], help="where separators go"),
)


def chunks_command(shell: Any, line: str) -> ChunkInspector:
    """Build the inspector for ``%agcore chunks VAR [--size N] [--overlap N] [--keep K]``.

    Args:
        shell: The IPython shell (its ``user_ns`` holds the variable).
        line: The rest of the magic line, after ``chunks``.

    Returns:
        The inspector (not displayed: the caller displays it).

    Raises:
        CommandError: No such variable, or it holds neither a str nor a Document.
        InvalidInputError: Size and overlap that do not fit together.
    """
    args = parse(_CHUNKS, line)
    namespace = shell.user_ns if shell is not None else {}
    if args.var not in namespace:
        raise CommandError(f"no variable {args.var!r} in the notebook")
    value = namespace[args.var]
    if not isinstance(value, str | Document):
        raise CommandError(
            f"variable {args.var!r} holds a {type(value).__name__}, not a str or a Document"
        )
    size = args.size
    overlap = min(200, size // 5) if args.overlap is None else args.overlap
    keep = False if args.keep == "none" else args.keep
    return ChunkInspector(value, chunk_size=size, chunk_overlap=overlap, keep_separator=keep)

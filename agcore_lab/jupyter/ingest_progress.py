"""``IngestProgressBar``: a progress bar for :meth:`RagPipeline.ingest` in a notebook.

Pass it as the ``progress`` callback; it updates while the cell runs (widget updates are sent
as they happen, even though the cell blocks)::

    bar = IngestProgressBar()
    display(bar)
    pipeline.ingest(documents, progress=bar)
"""

from __future__ import annotations

import html

import ipywidgets as widgets

from agcore_lab.jupyter.common.theme import style_tag
from agcore_lab.rag.pipeline import IngestProgress

__all__ = ["IngestProgressBar"]


class IngestProgressBar(widgets.VBox):  # type: ignore[misc]  # ipywidgets is untyped
    """A bar and a line of text (documents and chunks done), updated by each call.

    Example:
        >>> bar = IngestProgressBar()
        >>> bar(IngestProgress(1, 4, chunks_done=10, chunks_total=40))
        >>> bar.bar.value, bar.label_html.value.count("10 / 40 chunks")
        (25, 1)

    Notes:
        Interrupt the kernel to stop an ingest: documents already stored stay stored, each
        complete (a document's chunks are replaced in one write).
    """

    def __init__(self, description: str = "ingest") -> None:
        self.bar = widgets.IntProgress(
            value=0, min=0, max=100, description=description, bar_style="info"
        )
        self.label_html = widgets.HTML()
        self.last: IngestProgress | None = None
        super().__init__([widgets.HTML(style_tag()), self.bar, self.label_html])
        self.add_class("agc-view")

    def __call__(self, progress: IngestProgress) -> None:
        """Show ``progress`` (the pipeline calls this after each batch)."""
        self.last = progress
        self.bar.value = round(100 * progress.fraction)
        finished = progress.documents_done >= progress.documents_total
        self.bar.bar_style = "success" if finished else "info"
        text = (
            f"{progress.documents_done} / {progress.documents_total} documents · "
            f"{progress.chunks_done} / {progress.chunks_total} chunks"
        )
        self.label_html.value = f'<div class="agc-status">{html.escape(text)}</div>'

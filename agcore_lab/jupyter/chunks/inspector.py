"""``ChunkInspector``: see how a text is split into chunks, and tune the splitter live.

A thin view over :class:`~agcore_lab.rag.splitter.RecursiveCharacterSplitter`: sliders for the
chunk size and overlap, a separator editor (a JSON list) and the keep-separator choice; the text
with each chunk as a coloured span and the overlaps marked, a table of the chunks (index,
length, start, end; paged) and a histogram of their lengths with axes (inline SVG). Every
control has a method a user can call in a cell (:meth:`ChunkInspector.configure`,
:meth:`~ChunkInspector.show_page`).
The text is user data: it is always escaped, never rendered as markup.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Sequence
from typing import Any

import ipywidgets as widgets

from agcore_lab.errors import AgcoreError
from agcore_lab.jupyter.chunks._html import (
    CHUNK_STYLE,
    histogram_svg,
    render_chunk_table,
    render_chunked_text,
)
from agcore_lab.jupyter.common.history_parts import button
from agcore_lab.jupyter.common.text import cap_height, error_line, plural
from agcore_lab.jupyter.common.theme import style_tag
from agcore_lab.rag.documents import Document
from agcore_lab.rag.splitter import ChunkSpan, KeepSeparator, RecursiveCharacterSplitter

_STYLE = CHUNK_STYLE

__all__ = ["ChunkInspector", "histogram_svg", "render_chunk_table", "render_chunked_text"]
# (The HTML helpers live in ._chunk_html; they are re-exported here for callers of old.)

_KEEP: dict[str, KeepSeparator] = {"end": "end", "start": "start", "none (False)": False}


class ChunkInspector(widgets.VBox):  # type: ignore[misc]  # ipywidgets is untyped
    """A text (or a document's content) split into chunks, redrawn as the settings change.

    Args:
        source: The text, or a :class:`~agcore_lab.rag.documents.Document`.
        chunk_size: The starting chunk size (slider).
        chunk_overlap: The starting overlap (slider, at most the chunk size).
        separators: The starting separators (the default list when not given).
        keep_separator: ``"end"``, ``"start"`` or ``False``.
        page_size: Table rows per page.

    The chunk-size slider is logarithmic and bounded by the text: from 1 to the text's length
    (a drag moves by a steady ratio, so 300 and 3,000 are both easy to reach); the overlap
    slider runs from 0 to the chunk size. The view's height is capped (about 600 px): the text
    and the table scroll inside, the table is paged.

    Example:
        >>> inspector = ChunkInspector("One. Two. Three.", chunk_size=10, chunk_overlap=0)
        >>> [s.text for s in inspector.spans]
        ['One. Two.', 'Three.']
        >>> inspector.configure(chunk_size=6)
        >>> len(inspector.spans)
        3
    """

    def __init__(
        self,
        source: str | Document,
        *,
        chunk_size: int = 1000,
        chunk_overlap: int = 200,
        separators: Sequence[str] | None = None,
        keep_separator: KeepSeparator = "end",
        page_size: int = 50,
    ) -> None:
        self.text = source.content if isinstance(source, Document) else str(source)
        self.name = source.id if isinstance(source, Document) else "text"
        self.page_size = max(1, page_size)
        self.page = 0
        self.last_error: BaseException | None = None
        self._quiet = False  # set while the view moves its own controls
        self.splitter = RecursiveCharacterSplitter(
            chunk_size, chunk_overlap, separators=separators, keep_separator=keep_separator
        )
        self.spans: list[ChunkSpan] = self.splitter.chunk_spans(self.text)
        live = len(self.text) <= 200_000  # redraw while dragging only when it stays quick
        self.size_slider = widgets.FloatLogSlider(
            value=chunk_size,
            base=10,
            min=0,
            max=self._size_exponent(chunk_size),
            step=0.01,
            readout_format=",.0f",
            description="chunk size",
            continuous_update=live,
            layout=widgets.Layout(width="420px"),
            style={"description_width": "initial"},
        )
        self.overlap_slider = widgets.IntSlider(
            value=chunk_overlap,
            min=0,
            max=chunk_size,
            description="overlap",
            continuous_update=live,
            layout=widgets.Layout(width="360px"),
            style={"description_width": "initial"},
        )
        self.separators_text = widgets.Text(
            value=json.dumps(list(self.splitter.separators), ensure_ascii=False),
            description="separators",
            continuous_update=False,
            layout=widgets.Layout(width="420px"),
            style={"description_width": "initial"},
        )
        keep_label = {"end": "end", "start": "start", False: "none (False)"}
        self.keep_dropdown = widgets.Dropdown(
            options=list(_KEEP),
            value=keep_label[self.splitter.keep_separator],
            description="keep separator",
            style={"description_width": "initial"},
        )
        self.prev_button = button("◀ Prev", tooltip="The previous page of chunks")
        self.next_button = button("Next ▶", tooltip="The next page of chunks")
        self.page_html = widgets.HTML()
        self.stats_html = widgets.HTML()
        self.text_html = widgets.HTML(layout=widgets.Layout(width="100%"))
        self.table_html = widgets.HTML()
        self.histogram_html = widgets.HTML()
        self.error_html = widgets.HTML()
        controls = widgets.HBox(
            [self.size_slider, self.overlap_slider], layout=widgets.Layout(flex_flow="row wrap")
        )
        options = widgets.HBox(
            [self.separators_text, self.keep_dropdown],
            layout=widgets.Layout(flex_flow="row wrap"),
        )
        super().__init__(
            [
                widgets.HTML(style_tag() + _STYLE),
                controls,
                options,
                self.error_html,
                self.stats_html,
                self.text_html,
                widgets.HBox(
                    [self.histogram_html, self.table_html],
                    layout=widgets.Layout(align_items="flex-start"),
                ),
                widgets.HBox(
                    [self.prev_button, self.page_html, self.next_button],
                    layout=widgets.Layout(align_items="center"),
                ),
            ]
        )
        self.add_class("agc-view")
        self.add_class("agc-chunk-inspector")
        cap_height(self)
        for control in (self.size_slider, self.overlap_slider, self.keep_dropdown):
            control.observe(self._changed, names="value")
        self.separators_text.observe(self._changed, names="value")
        self.prev_button.on_click(lambda _: self.show_page(self.page - 1))
        self.next_button.on_click(lambda _: self.show_page(self.page + 1))
        self._render()

    def _size_exponent(self, chunk_size: int) -> float:
        # The slider's top: the text's length (at least the chunk size, and 10).
        return math.log10(max(10, len(self.text), chunk_size))

    def __repr__(self) -> str:
        return f"ChunkInspector({self.name!r}, {self.splitter!r}, chunks={len(self.spans)})"

    def _repr_html_(self) -> str:
        # Static snapshot for saved notebooks, nbviewer, GitHub and exported HTML: the same
        # drawing, no controls, no SVG (sanitizers strip it to a jumble of its text).
        return (
            f'{style_tag()}{_STYLE}<div class="agc-view agc-chunk-inspector">'
            f"{self.stats_html.value}{self.text_html.value}{self.table_html.value}</div>"
        )

    # -- the Python API behind the controls ---------------------------------------------------

    def configure(
        self,
        *,
        chunk_size: int | None = None,
        chunk_overlap: int | None = None,
        separators: Sequence[str] | None = None,
        keep_separator: KeepSeparator | None = None,
    ) -> None:
        """Change settings (as the controls do) and redraw.

        Raises:
            InvalidInputError: The settings are not valid together (the view keeps showing
                the last valid split, with the error under the controls).
        """
        splitter = RecursiveCharacterSplitter(
            self.splitter.chunk_size if chunk_size is None else chunk_size,
            self.splitter.chunk_overlap if chunk_overlap is None else chunk_overlap,
            separators=self.splitter.separators if separators is None else separators,
            keep_separator=(
                self.splitter.keep_separator if keep_separator is None else keep_separator
            ),
        )
        self.splitter = splitter
        self.spans = splitter.chunk_spans(self.text)
        self.page = 0
        self._sync_controls()
        self._render()

    @property
    def pages(self) -> int:
        """The number of table pages (at least 1)."""
        return max(1, -(-len(self.spans) // self.page_size))

    def show_page(self, page: int) -> None:
        """Show page ``page`` of the chunk table (0-based; clamped to the pages there are)."""
        self.page = min(max(0, page), self.pages - 1)
        self._render()

    def page_spans(self) -> list[ChunkSpan]:
        """The chunks on the table's current page."""
        start = self.page * self.page_size
        return self.spans[start : start + self.page_size]

    # -- plumbing -----------------------------------------------------------------------------

    def _changed(self, _change: Any) -> None:
        if self._quiet:
            return
        size = max(1, round(self.size_slider.value))
        # The browser snaps the log slider to its grid (0.01 in the exponent, about 2 %) and
        # sends that back: a value within half a step of the current size is no change.
        current = self.splitter.chunk_size
        if abs(math.log10(size) - math.log10(current)) <= self.size_slider.step / 2:
            size = current
        try:
            try:
                parsed = json.loads(self.separators_text.value)
            except ValueError:
                parsed = None
            if not isinstance(parsed, list) or not all(isinstance(s, str) for s in parsed):
                raise ValueError(
                    'separators must be a JSON list of strings, e.g. ["\\n\\n", " ", ""]'
                )
            self.configure(
                chunk_size=size,
                chunk_overlap=min(self.overlap_slider.value, size),
                separators=parsed,
                keep_separator=_KEEP[self.keep_dropdown.value],
            )
        except (AgcoreError, ValueError) as exc:
            self.last_error = exc
            self.error_html.value = f'<div class="agc-error">{html.escape(error_line(exc))}</div>'
            return
        self.last_error = None
        self.error_html.value = ""

    def _sync_controls(self) -> None:
        s = self.splitter
        keep_label = {"end": "end", "start": "start", False: "none (False)"}
        self._quiet = True
        try:
            self.size_slider.max = max(self.size_slider.max, self._size_exponent(s.chunk_size))
            self.size_slider.value = s.chunk_size
            self.overlap_slider.max = s.chunk_size
            self.overlap_slider.value = s.chunk_overlap
            self.separators_text.value = json.dumps(list(s.separators), ensure_ascii=False)
            self.keep_dropdown.value = keep_label[s.keep_separator]
        finally:
            self._quiet = False

    def _render(self) -> None:
        spans, size = self.spans, self.splitter.chunk_size
        lengths = [len(s.text) for s in spans]
        overlapping = sum(max(0, a.end - b.start) for a, b in zip(spans, spans[1:], strict=False))
        mean = sum(lengths) / len(lengths) if lengths else 0
        stats = (
            f"{self.name}: {plural(len(self.text), 'character')} → "
            f"{plural(len(spans), 'chunk')}; length mean {mean:,.0f}, min "
            f"{min(lengths, default=0):,}, max {max(lengths, default=0):,} (chunk size "
            f"{size:,}, overlap {self.splitter.chunk_overlap:,}); "
            f"{plural(overlapping, 'character')} in overlaps"
        )
        self.stats_html.value = f'<div class="agc-status">{html.escape(stats)}</div>'
        self.text_html.value = render_chunked_text(self.text, spans)
        self.page = min(self.page, self.pages - 1)
        start = self.page * self.page_size
        self.table_html.value = render_chunk_table(spans, start, self.page_size)
        self.histogram_html.value = histogram_svg(lengths, size)
        self.prev_button.disabled = self.page == 0
        self.next_button.disabled = self.page >= self.pages - 1
        shown = f"{start + 1:,}-{min(start + self.page_size, len(spans)):,}" if spans else "0"
        self.page_html.value = (
            f'<span class="agc-status">chunks {shown} of {len(spans):,} · page '
            f"{self.page + 1} of {self.pages}</span>"
        )

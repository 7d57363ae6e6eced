"""``ChunkInspector``: see how a text is split into chunks, and tune the splitter live.

A thin view over :class:`~agcore_lab.rag.splitter.RecursiveCharacterSplitter`: sliders for the
chunk size and overlap, a separator editor (a JSON list) and the keep-separator choice; the text
with each chunk as a coloured span and the overlaps marked, a table of the chunks (index,
length, start, end) and a histogram of their lengths (inline SVG). Every control has a method a
user can call in a cell (:meth:`ChunkInspector.configure`, :meth:`~ChunkInspector.show_more`).
The text is user data: it is always escaped, never rendered as markup.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from typing import Any

import ipywidgets as widgets

from agcore_lab.errors import AgcoreError
from agcore_lab.jupyter._common import error_line
from agcore_lab.jupyter._confirm import button
from agcore_lab.jupyter._theme import style_tag
from agcore_lab.rag.documents import Document
from agcore_lab.rag.splitter import ChunkSpan, KeepSeparator, RecursiveCharacterSplitter

__all__ = ["ChunkInspector", "histogram_svg", "render_chunk_table", "render_chunked_text"]

MAX_TEXT_CHARS = 20_000  # the coloured text stops here (the table and histogram do not)
_KEEP: dict[str, KeepSeparator] = {"end": "end", "start": "start", "none (False)": False}

_PALETTE = (
    ("--jp-brand-color1", "#1976d2"),
    ("--jp-success-color1", "#2e7d32"),
    ("--jp-warn-color1", "#f57c00"),
    ("--jp-accent-color1", "#7b1fa2"),
    ("--jp-info-color1", "#0097a7"),
    ("--jp-error-color1", "#c62828"),
)
_STYLE = (
    "<style>"
    ".agc-view .agc-chunked { white-space: pre-wrap; overflow-wrap: anywhere;"
    " max-height: 360px; overflow-y: auto; padding: 4px 6px;"
    " font-family: var(--jp-code-font-family, monospace);"
    " font-size: var(--jp-code-font-size, 12px);"
    " border: 1px solid var(--jp-border-color2, #e0e0e0); }"
    ".agc-view .agc-ck { border-radius: 2px; }"
    + "".join(
        f".agc-view .agc-ck{i} {{ background: color-mix(in srgb, var({var}, {fallback}) 28%,"
        " transparent); }"
        for i, (var, fallback) in enumerate(_PALETTE)
    )
    + ".agc-view .agc-ck-overlap { outline: 1px dashed var(--jp-warn-color0, #e65100);"
    " background: color-mix(in srgb, var(--jp-warn-color1, #f57c00) 45%, transparent); }"
    ".agc-view .agc-ck-label { font-size: 9px; vertical-align: super;"
    " color: var(--jp-ui-font-color2, #555); font-family: var(--jp-ui-font-family, sans-serif); }"
    ".agc-view svg.agc-hist rect { fill: var(--jp-brand-color1, #1976d2); opacity: 0.75; }"
    "</style>"
)


def render_chunked_text(text: str, spans: Sequence[ChunkSpan], limit: int = MAX_TEXT_CHARS) -> str:
    """The text with each chunk in a coloured ``<span>`` and overlapping stretches marked.

    Text outside every chunk (stripped whitespace) is shown plain; each chunk's start carries
    its index as a small label. Only the first ``limit`` characters are drawn.
    """
    shown = text[:limit]
    cuts = {0, len(shown)}
    for span in spans:
        cuts.update(p for p in (span.start, span.end) if p <= len(shown))
    points = sorted(cuts)
    starts: dict[int, list[int]] = {}
    for span in spans:
        starts.setdefault(span.start, []).append(span.number)
    parts: list[str] = []
    active: list[ChunkSpan] = []
    pending = sorted(spans, key=lambda s: s.start)
    next_span = 0
    for a, b in zip(points, points[1:], strict=False):
        while next_span < len(pending) and pending[next_span].start <= a:
            active.append(pending[next_span])
            next_span += 1
        active = [s for s in active if s.end > a]
        for index in starts.get(a, ()):
            parts.append(f'<span class="agc-ck-label">{index}</span>')
        piece = html.escape(shown[a:b])
        if not active:
            parts.append(piece)
        elif len(active) == 1:
            index = active[0].number
            colour = index % len(_PALETTE)
            parts.append(f'<span class="agc-ck agc-ck{colour}" data-chunk="{index}">{piece}</span>')
        else:
            ids = ",".join(str(s.number) for s in active)
            parts.append(
                f'<span class="agc-ck agc-ck-overlap" data-chunks="{ids}" '
                f'title="overlap of chunks {ids}">{piece}</span>'
            )
    if len(text) > limit:
        parts.append(
            f'<span class="agc-more-text"> … ({len(text) - limit:,} more characters not '
            "drawn)</span>"
        )
    return f'<div class="agc-chunked">{"".join(parts)}</div>'


def render_chunk_table(spans: Sequence[ChunkSpan], limit: int) -> str:
    """The first ``limit`` chunks as a table: index, length, start, end and the first words."""
    rows = "".join(
        f"<tr><td>{s.number}</td><td>{len(s.text)}</td><td>{s.start}</td><td>{s.end}</td>"
        f"<td>{html.escape(_preview(s.text))}</td></tr>"
        for s in spans[:limit]
    )
    more = len(spans) - min(limit, len(spans))
    tail = f'<div class="agc-more-text">… {more} more chunk(s)</div>' if more else ""
    return (
        '<table class="agc-table agc-chunk-table"><tr><th>index</th><th>length</th>'
        f"<th>start</th><th>end</th><th>text</th></tr>{rows}</table>{tail}"
    )


def _preview(text: str, width: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def histogram_svg(lengths: Sequence[int], chunk_size: int, bins: int = 20) -> str:
    """An inline SVG histogram of chunk lengths from 0 to ``chunk_size``."""
    if not lengths:
        return '<div class="agc-status">no chunks</div>'
    top = max(chunk_size, max(lengths), 1)
    counts = [0] * bins
    for length in lengths:
        counts[min(bins - 1, length * bins // (top + 1))] += 1
    width, height, pad = 400, 110, 18
    bar_w = (width - 2 * pad) / bins
    peak = max(counts)
    bars = []
    for i, count in enumerate(counts):
        if not count:
            continue
        h = (height - 2 * pad) * count / peak
        low, high = i * (top + 1) // bins, (i + 1) * (top + 1) // bins - 1
        bars.append(
            f'<rect x="{pad + i * bar_w:.1f}" y="{height - pad - h:.1f}" width="{bar_w - 1:.1f}" '
            f'height="{h:.1f}"><title>{count} chunk(s) of length {low}-{high}</title></rect>'
        )
    return (
        f'<svg class="agc-plot agc-hist" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="histogram of chunk lengths">{"".join(bars)}'
        f'<line class="agc-axis" x1="{pad}" y1="{height - pad}" x2="{width - pad}" '
        f'y2="{height - pad}"/>'
        f'<text class="agc-tick" x="{pad}" y="{height - 4}">0</text>'
        f'<text class="agc-tick" x="{width - pad}" y="{height - 4}" text-anchor="end">{top}</text>'
        f'<text class="agc-tick" x="{pad}" y="{pad - 6}">{peak} chunk(s)</text></svg>'
    )


class ChunkInspector(widgets.VBox):  # type: ignore[misc]  # ipywidgets is untyped
    """A text (or a document's content) split into chunks, redrawn as the settings change.

    Args:
        source: The text, or a :class:`~agcore_lab.rag.documents.Document`.
        chunk_size: The starting chunk size (slider).
        chunk_overlap: The starting overlap (slider, at most the chunk size).
        separators: The starting separators (the default list when not given).
        keep_separator: ``"end"``, ``"start"`` or ``False``.
        page_size: Table rows shown at first and added by ``Show more``.

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
        page_size: int = 100,
    ) -> None:
        self.text = source.content if isinstance(source, Document) else str(source)
        self.name = source.id if isinstance(source, Document) else "text"
        self.page_size = max(1, page_size)
        self.limit = self.page_size
        self.last_error: BaseException | None = None
        self._quiet = False  # set while the view moves its own controls
        self.splitter = RecursiveCharacterSplitter(
            chunk_size, chunk_overlap, separators=separators, keep_separator=keep_separator
        )
        self.spans: list[ChunkSpan] = self.splitter.chunk_spans(self.text)
        size_max = max(2000, chunk_size, min(len(self.text), 20_000))
        live = len(self.text) <= 200_000  # redraw while dragging only when it stays quick
        self.size_slider = widgets.IntSlider(
            value=chunk_size,
            min=1,
            max=size_max,
            description="chunk size",
            continuous_update=live,
            style={"description_width": "initial"},
        )
        self.overlap_slider = widgets.IntSlider(
            value=chunk_overlap,
            min=0,
            max=chunk_size,
            description="overlap",
            continuous_update=live,
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
        self.more_button = button("Show more", tooltip="Show more rows of the table")
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
                widgets.HBox([self.histogram_html, self.table_html]),
                self.more_button,
            ]
        )
        self.add_class("agc-view")
        self.add_class("agc-chunk-inspector")
        for control in (self.size_slider, self.overlap_slider, self.keep_dropdown):
            control.observe(self._changed, names="value")
        self.separators_text.observe(self._changed, names="value")
        self.more_button.on_click(lambda _: self.show_more())
        self._render()

    def __repr__(self) -> str:
        return f"ChunkInspector({self.name!r}, {self.splitter!r}, chunks={len(self.spans)})"

    def _repr_html_(self) -> str:
        # Static fallback for nbviewer / exported HTML: the same drawing, no controls.
        return (
            f'{style_tag()}{_STYLE}<div class="agc-view agc-chunk-inspector">'
            f"{self.stats_html.value}{self.text_html.value}{self.histogram_html.value}"
            f"{self.table_html.value}</div>"
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
        self.limit = self.page_size
        self._sync_controls()
        self._render()

    def show_more(self, rows: int | None = None) -> None:
        """Show ``rows`` more table rows (a page by default)."""
        self.limit += rows or self.page_size
        self._render()

    # -- plumbing -----------------------------------------------------------------------------

    def _changed(self, _change: Any) -> None:
        if self._quiet:
            return
        size = self.size_slider.value
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
            self.size_slider.max = max(self.size_slider.max, s.chunk_size)
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
            f"{self.name}: {len(self.text):,} characters → {len(spans)} chunk(s); length mean "
            f"{mean:.0f}, min {min(lengths, default=0)}, max {max(lengths, default=0)} "
            f"(chunk size {size}, overlap {self.splitter.chunk_overlap}); "
            f"{overlapping:,} characters in overlaps"
        )
        self.stats_html.value = f'<div class="agc-status">{html.escape(stats)}</div>'
        self.text_html.value = render_chunked_text(self.text, spans)
        self.table_html.value = render_chunk_table(spans, self.limit)
        self.histogram_html.value = histogram_svg(lengths, size)
        self.more_button.disabled = len(spans) <= self.limit

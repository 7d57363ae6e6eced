"""HTML for the chunk inspector: the text with its chunks coloured, a chunk table, a histogram.

The text is user data: it is always escaped, never rendered as markup.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path

from agcore_lab.jupyter.common.text import plural
from agcore_lab.rag.splitter import ChunkSpan

__all__ = [
    "CHUNK_STYLE",
    "MAX_TEXT_CHARS",
    "histogram_svg",
    "render_chunk_table",
    "render_chunked_text",
]

MAX_TEXT_CHARS = 20_000  # the coloured text stops here (the table and histogram do not)

_PALETTE = (
    ("--jp-brand-color1", "#1976d2"),
    ("--jp-success-color1", "#2e7d32"),
    ("--jp-warn-color1", "#f57c00"),
    ("--jp-accent-color1", "#7b1fa2"),
    ("--jp-info-color1", "#0097a7"),
    ("--jp-error-color1", "#c62828"),
)
CHUNK_STYLE = (
    "<style>" + (Path(__file__).parent / "chunks.css").read_text(encoding="utf-8") + "</style>"
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


def render_chunk_table(spans: Sequence[ChunkSpan], start: int, size: int) -> str:
    """One page of the chunks (``size`` rows from ``start``) as a table: index, length, start,
    end and the first words."""
    page = spans[start : start + size]
    rows = "".join(
        f"<tr><td>{s.number}</td><td>{len(s.text)}</td><td>{s.start}</td><td>{s.end}</td>"
        f"<td>{html.escape(_preview(s.text))}</td></tr>"
        for s in page
    )
    return (
        '<div class="agc-chunk-table-box"><table class="agc-table agc-chunk-table"><tr>'
        "<th>index</th><th>length</th><th>start</th><th>end</th><th>text</th></tr>"
        f"{rows}</table></div>"
    )


def _preview(text: str, width: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _ticks(top: int, count: int = 5) -> list[int]:
    """``count + 1`` round tick values from 0 to about ``top``."""
    if top <= 0:
        return [0]
    raw = top / count
    magnitude = 10 ** (len(str(int(raw))) - 1) if raw >= 1 else 1
    step = max(1, next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw))
    return list(range(0, top + 1, step))


def histogram_svg(lengths: Sequence[int], chunk_size: int, bins: int = 20) -> str:
    """An inline SVG histogram of chunk lengths from 0 to ``chunk_size``, with both axes
    labelled (ticks in characters and in chunks) and the chunk size marked."""
    if not lengths:
        return '<div class="agc-status">no chunks</div>'
    top = max(chunk_size, max(lengths), 1)
    counts = [0] * bins
    for length in lengths:
        counts[min(bins - 1, length * bins // (top + 1))] += 1
    width, height = 420, 150
    left, right, upper, lower = 36, 10, 10, 34
    plot_w, plot_h = width - left - right, height - upper - lower
    bar_w = plot_w / bins
    peak = max(counts)
    parts = []
    for i, count in enumerate(counts):
        if not count:
            continue
        h = plot_h * count / peak
        low, high = i * (top + 1) // bins, (i + 1) * (top + 1) // bins - 1
        parts.append(
            f'<rect x="{left + i * bar_w:.1f}" y="{upper + plot_h - h:.1f}" '
            f'width="{max(bar_w - 1, 1):.1f}" height="{h:.1f}">'
            f"<title>{plural(count, 'chunk')} of length {low}-{high}</title></rect>"
        )
    base = upper + plot_h
    parts.append(
        f'<line class="agc-axis" x1="{left}" y1="{base}" x2="{left + plot_w}" y2="{base}"/>'
    )
    parts.append(f'<line class="agc-axis" x1="{left}" y1="{upper}" x2="{left}" y2="{base}"/>')
    for value in _ticks(top):
        x = left + plot_w * value / top
        parts.append(
            f'<line class="agc-axis" x1="{x:.1f}" y1="{base}" x2="{x:.1f}" y2="{base + 3}"/>'
            f'<text class="agc-tick agc-x-tick" x="{x:.1f}" y="{base + 13}" '
            f'text-anchor="middle">{value:,}</text>'
        )
    for value in _ticks(peak, 3):
        y = base - plot_h * value / peak
        parts.append(
            f'<line class="agc-axis" x1="{left - 3}" y1="{y:.1f}" x2="{left}" y2="{y:.1f}"/>'
            f'<text class="agc-tick agc-y-tick" x="{left - 5}" y="{y + 3:.1f}" '
            f'text-anchor="end">{value:,}</text>'
        )
    size_x = left + plot_w * chunk_size / top
    parts.append(
        f'<line class="agc-size-line" x1="{size_x:.1f}" y1="{upper}" x2="{size_x:.1f}" '
        f'y2="{base}"><title>chunk size {chunk_size:,}</title></line>'
    )
    parts.append(
        f'<text class="agc-tick" x="{left + plot_w / 2:.1f}" y="{height - 4}" '
        'text-anchor="middle">chunk length (characters)</text>'
        f'<text class="agc-tick" x="10" y="{upper + plot_h / 2:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 10 {upper + plot_h / 2:.1f})">chunks</text>'
    )
    return (
        f'<svg class="agc-plot agc-hist" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="histogram of chunk lengths">{"".join(parts)}</svg>'
    )

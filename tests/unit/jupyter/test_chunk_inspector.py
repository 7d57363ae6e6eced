"""ChunkInspector, IngestProgressBar and ``%agcore chunks``, built in plain Python."""

from __future__ import annotations

import math
import re
from types import SimpleNamespace

import pytest

from agcore_lab.errors import InvalidInputError
from agcore_lab.jupyter._magic_args import CommandError
from agcore_lab.jupyter._rag_magics import chunks_command
from agcore_lab.jupyter.chunks.inspector import (
    ChunkInspector,
    histogram_svg,
    render_chunk_table,
    render_chunked_text,
)
from agcore_lab.jupyter.ingest_progress import IngestProgressBar
from agcore_lab.rag import Document, IngestProgress, RecursiveCharacterSplitter

XSS = "<img src=x onerror=alert(1)>"
TEXT = "First sentence here. Second one follows. Third is last.\n\n第二段。还有一句！"


def _text(html_value: str) -> str:
    """Visible text: tags dropped, the usual entities decoded."""
    plain = re.sub(r"<[^>]+>", "", html_value)
    return (
        plain.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", '"')
        .replace("&#x27;", "'")
        .replace("&amp;", "&")
    )


def test_shows_chunks_as_coloured_spans_with_overlaps() -> None:
    view = ChunkInspector(TEXT, chunk_size=16, chunk_overlap=8)
    expected = RecursiveCharacterSplitter(16, 8).chunk_spans(TEXT)
    assert view.spans == expected and len(expected) >= 3
    body = view.text_html.value
    assert body.count('class="agc-ck-label"') == len(expected)
    assert 'data-chunk="0"' in body and "agc-ck-overlap" in body
    # Every character is still there, in order, once (labels aside).
    without_labels = re.sub(r'<span class="agc-ck-label">\d+</span>', "", body)
    assert _text(without_labels) == TEXT
    assert "chunk size 16, overlap 8" in view.stats_html.value
    assert "<svg" in view.histogram_html.value


def test_text_is_always_escaped() -> None:
    doc = Document(id=XSS, content=f"{XSS} " * 20 + '"quoted" & more')
    view = ChunkInspector(doc, chunk_size=40, chunk_overlap=5)
    for value in (view.text_html.value, view.table_html.value, view.stats_html.value):
        assert "<img" not in value
    assert "&lt;img src=x onerror=alert(1)&gt;" in view.text_html.value
    assert view.name == XSS
    page = view._repr_html_()
    assert "<img" not in page and "<input" not in page and "<svg" not in page  # no SVG: sanitizers
    assert "agc-view" in view._dom_classes and "ChunkInspector(" in repr(view)


def test_sliders_and_options_update_live() -> None:
    view = ChunkInspector(TEXT, chunk_size=60, chunk_overlap=0)
    first = len(view.spans)
    view.size_slider.value = 20
    assert view.splitter.chunk_size == 20 and len(view.spans) > first
    assert view.overlap_slider.max == 20
    view.overlap_slider.value = 10
    assert view.splitter.chunk_overlap == 10
    view.keep_dropdown.value = "start"
    assert view.splitter.keep_separator == "start"
    view.separators_text.value = '["\\n\\n", ""]'
    assert view.splitter.separators == ("\n\n", "")
    assert view.spans == RecursiveCharacterSplitter(
        20, 10, separators=["\n\n", ""], keep_separator="start"
    ).chunk_spans(TEXT)
    assert view.error_html.value == ""


def test_shrinking_the_size_below_the_overlap_pulls_the_overlap_down() -> None:
    view = ChunkInspector(TEXT, chunk_size=50, chunk_overlap=40)
    view.size_slider.value = 25
    assert view.splitter.chunk_overlap == 25 and view.overlap_slider.value == 25


def test_bad_separators_show_an_error_and_keep_the_last_split() -> None:
    view = ChunkInspector(TEXT, chunk_size=30, chunk_overlap=0)
    before = view.spans
    view.separators_text.value = "not json"
    assert "JSON list of strings" in view.error_html.value and view.spans == before
    assert isinstance(view.last_error, ValueError)
    view.separators_text.value = '[" ", ""]'
    assert view.error_html.value == "" and view.last_error is None


def test_configure_is_the_api_behind_the_controls() -> None:
    view = ChunkInspector(TEXT, chunk_size=30, chunk_overlap=0)
    view.configure(chunk_size=15, chunk_overlap=5, keep_separator=False)
    assert (view.size_slider.value, view.overlap_slider.value) == (15, 5)
    assert view.keep_dropdown.value == "none (False)"
    with pytest.raises(InvalidInputError):
        view.configure(chunk_overlap=99)


def test_table_pages_and_text_is_cut() -> None:
    long_text = "word " * 3000
    view = ChunkInspector(long_text, chunk_size=20, chunk_overlap=0, page_size=50)
    assert len(view.spans) > 100
    assert view.table_html.value.count("<tr>") == 51  # header + one page
    assert view.prev_button.disabled and not view.next_button.disabled
    assert f"chunks 1-50 of {len(view.spans):,} · page 1 of {view.pages}" in view.page_html.value
    view.next_button.click()
    assert view.table_html.value.count("<tr>") == 51  # still one page: paged, not growing
    assert [s.number for s in view.page_spans()] == list(range(50, 100))
    assert "<td>50</td>" in view.table_html.value and "<td>0</td>" not in view.table_html.value
    view.show_page(10_000)
    assert view.next_button.disabled and view.page == view.pages - 1
    view.configure(chunk_size=30)  # a new split starts on page 1
    assert view.page == 0
    cut = render_chunked_text(long_text, view.spans, limit=100)
    assert "more characters not drawn" in cut and len(_text(cut)) < 400


def test_helpers_render_empty_states() -> None:
    assert "no chunks" in histogram_svg([], 100)
    assert render_chunk_table([], 0, 10).count("<tr>") == 1
    assert _text(render_chunked_text("", [])) == ""
    svg = histogram_svg([5, 10, 10, 95], 100)
    assert svg.count("<rect") == 3 and "2 chunks of length" in svg


def test_chunks_magic_opens_the_inspector_on_a_variable() -> None:
    shell = SimpleNamespace(user_ns={"notes": TEXT, "doc": Document(id="d", content=TEXT), "n": 3})
    view = chunks_command(shell, "notes --size 40 --overlap 8 --keep start")
    assert isinstance(view, ChunkInspector)
    assert (view.splitter.chunk_size, view.splitter.chunk_overlap) == (40, 8)
    assert view.splitter.keep_separator == "start"
    assert chunks_command(shell, "doc --size 50").splitter.chunk_overlap == 10
    assert chunks_command(shell, "doc").name == "d"
    with pytest.raises(CommandError, match="no variable 'missing'"):
        chunks_command(shell, "missing")
    with pytest.raises(CommandError, match="holds a int"):
        chunks_command(shell, "n")
    with pytest.raises(CommandError):
        chunks_command(shell, "")


def test_ingest_progress_bar() -> None:
    bar = IngestProgressBar()
    bar(IngestProgress(1, 4, chunks_done=10, chunks_total=40))
    assert bar.bar.value == 25 and bar.bar.bar_style == "info"
    assert "1 / 4 documents · 10 / 40 chunks" in bar.label_html.value
    bar(IngestProgress(4, 4, 40, 40))
    assert bar.bar.value == 100 and bar.bar.bar_style == "success"
    assert bar.last == IngestProgress(4, 4, 40, 40)


def test_size_slider_is_logarithmic_and_bounded_by_the_text() -> None:
    # The issue: a 1-11,113 slider on a 135 px track, where a 40 px drag jumped 300 -> 3,586.
    text = "word " * 2222 + "end"  # 11,113 characters
    view = ChunkInspector(text, chunk_size=300, chunk_overlap=30)
    slider = view.size_slider
    assert slider.base == 10 and slider.min == 0
    assert round(10**slider.max) == len(text)  # bounded by the text
    # One step of the slider changes the size by about 2 %, wherever it is.
    for size in (300, 3000):
        assert size * 10**slider.step / size < 1.03
    slider.value = 10 ** (math.log10(300) + 0.1)  # a short drag to the right
    assert 370 <= view.splitter.chunk_size <= 380  # not 3,586
    assert view.overlap_slider.max == view.splitter.chunk_size
    assert isinstance(view.splitter.chunk_size, int)


def test_histogram_has_axes_with_ticks_and_the_size_marked() -> None:
    svg = histogram_svg([50, 120, 130, 400, 990], 1000)
    ticks = re.findall(r'class="agc-tick agc-x-tick"[^>]*>([^<]+)<', svg)
    assert ticks == ["0", "200", "400", "600", "800", "1,000"]
    assert re.findall(r'class="agc-tick agc-y-tick"[^>]*>([^<]+)<', svg)[0] == "0"
    assert "chunk length (characters)" in svg and ">chunks</text>" in svg
    assert 'class="agc-size-line"' in svg and "chunk size 1,000" in svg


def test_height_is_capped() -> None:
    view = ChunkInspector("word " * 3000, chunk_size=20, chunk_overlap=0)
    assert view.layout.max_height == "600px" and view.layout.overflow_y == "auto"


def test_the_browsers_snapped_slider_value_does_not_change_the_size() -> None:
    view = ChunkInspector("word " * 4000, chunk_size=300, chunk_overlap=0)
    view.size_slider.value = 10**2.48  # 302: what the browser sends back for 300
    assert view.splitter.chunk_size == 300
    view.size_slider.value = 10**2.6  # a real move
    assert view.splitter.chunk_size == 398

"""The incremental Server-Sent-Events parser."""

from __future__ import annotations

import pytest

from agcore_lab.llm.sse import SSEEvent, SSEParser


def feed_all(*chunks: bytes | str) -> list[SSEEvent]:
    parser = SSEParser()
    events: list[SSEEvent] = []
    for chunk in chunks:
        events.extend(parser.feed(chunk))
    return events


def test_data_lines_dispatch_on_blank_line() -> None:
    parser = SSEParser()

    assert parser.feed(b'data: {"a": 1}\n') == []
    assert parser.pending
    assert parser.feed(b"\n") == [SSEEvent(data='{"a": 1}')]
    assert not parser.pending


def test_multi_line_data_joined_with_newlines() -> None:
    assert feed_all("data: first\ndata:second\ndata\ndata:  indented\n\n") == [
        SSEEvent(data="first\nsecond\n\n indented")
    ]


def test_comments_ignored() -> None:
    events = feed_all(": keep-alive\n\n:another\ndata: x\n: between\n\n")

    assert events == [SSEEvent(data="x")]


def test_blank_line_without_data_dispatches_nothing() -> None:
    assert feed_all("\n\n\nevent: ping\n\n") == []


def test_event_id_and_retry_fields() -> None:
    events = feed_all("event: delta\nid: 7\nretry: 1500\ndata: a\n\ndata: b\n\n")

    assert events == [
        SSEEvent(data="a", event="delta", id="7", retry=1500),
        SSEEvent(data="b", event="message", id="7", retry=None),  # the id carries over
    ]


def test_invalid_retry_and_unknown_fields_ignored() -> None:
    assert feed_all("retry: soon\nfoo: bar\ndata: x\n\n") == [SSEEvent(data="x")]


def test_done_marker() -> None:
    events = feed_all('data: {"x": 1}\n\ndata: [DONE]\n\n')

    assert [e.is_done for e in events] == [False, True]


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
def test_line_endings(newline: str) -> None:
    text = f"data: a{newline}data: b{newline}{newline}data: c{newline}{newline}"

    assert feed_all(text) == [SSEEvent(data="a\nb"), SSEEvent(data="c")]


def test_byte_at_a_time_including_crlf_and_utf8_split() -> None:
    raw = "data: héllo ✓ 字\r\n\r\ndata: [DONE]\r\n\r\n".encode()

    events = feed_all(*(raw[i : i + 1] for i in range(len(raw))))

    assert events == [SSEEvent(data="héllo ✓ 字"), SSEEvent(data="[DONE]")]


def test_crlf_split_across_chunks_is_one_line_end() -> None:
    # "\r" ends one chunk and "\n" starts the next: still one line ending, not a blank line.
    assert feed_all("data: a\r", "\ndata: b\r\n\r\n") == [SSEEvent(data="a\nb")]


def test_unicode_line_separators_inside_data_are_kept() -> None:
    # str.splitlines would break on these; SSE only ends lines at \r and \n.
    data = '{"t": "a\u2028b\x0bc\x1cd\x85e"}'

    assert feed_all(f"data: {data}\n\n") == [SSEEvent(data=data)]


def test_leading_bom_stripped() -> None:
    assert feed_all(b"\xef\xbb\xbfdata: x\n\n") == [SSEEvent(data="x")]


def test_pending_reports_a_stream_cut_mid_event() -> None:
    parser = SSEParser()
    parser.feed(b'data: {"ok": true}\n\ndata: {"choi')

    assert parser.pending  # half a line buffered

    complete_line_only = SSEParser()
    complete_line_only.feed("data: x\n")
    assert complete_line_only.pending  # a line, but no dispatching blank line

    partial_character = SSEParser()
    partial_character.feed(b"data: x\n\n" + "✓".encode()[:1])
    assert partial_character.pending


def test_feed_line_accepts_bytes_and_text() -> None:
    parser = SSEParser()

    assert parser.feed_line(b"data: one") is None
    assert parser.feed_line("data: two") is None
    assert parser.feed_line(b"") == SSEEvent(data="one\ntwo")

"""RecursiveCharacterSplitter: LangChain parity, errors, spans, and properties (hypothesis)."""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_text_splitters import RecursiveCharacterTextSplitter

from agcore_lab.errors import InvalidInputError
from agcore_lab.rag import DEFAULT_SEPARATORS, Document, RecursiveCharacterSplitter, _bulk
from agcore_lab.rag._walk import walkable
from agcore_lab.rag.splitter import KeepSeparator

KEEP_MODES: list[KeepSeparator] = ["start", "end", False]

ENGLISH = (
    "Context slots fork a conversation. You can try an alternative, compare it with the "
    "original side by side, and merge the better one back!\n\nCheckpoints are taken after "
    "every turn. Rolling back is cheap: a checkpoint records only the head of each slot. "
    "Is that all? No. Forks share their history for free.\n"
)
CODE = (
    "def split(text: str) -> list[str]:\n    parts = text.split('\\n\\n')\n"
    "    return [p.strip() for p in parts if p]\n\n\nclass Store:\n    def add(self, x):\n"
    "        self.items.append(x)  # keep order\n\n    def __len__(self):\n"
    "        return len(self.items)\n"
)
CHINESE = (
    "机器学习是人工智能的一个分支。它使用数据来训练模型！模型能做什么？它可以预测、分类和生成。"
    "\n\n检查点让会话可以回到之前的轮次。分叉共享历史，不需要复制。"
)
MIXED = "Agents 会话 use tools. 工具调用需要批准？Yes — approvals pause the turn。\n" * 3
EMOJI = "😀 smile 😀😀. 🎉 party 🎉! 👩‍👩‍👧 family.\n\n🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀 launch"
LONG_WORDS = "a" * 57 + " " + "b" * 100 + "\n" + "x" * 250 + ". short. " + "y" * 33
EXACT = "1234567890 abcdefghij\n\nklmnopqrst\n" + "0123456789" * 3  # pieces of exactly 10
RUNS = "para one\n\n\n\npara two\n\n\nthree   four\n\n\n\n\n" + "  spaced   out  " * 4
TEXTS = {
    "english": ENGLISH * 3,
    "code": CODE * 2,
    "chinese": CHINESE * 2,
    "mixed": MIXED,
    "emoji": EMOJI,
    "long_words": LONG_WORDS,
    "exact": EXACT,
    "runs": RUNS,
    "empty": "",
    "blank": " \n\n \t ",
}
SIZES = [(1, 0), (2, 1), (10, 0), (10, 3), (10, 10), (25, 5), (40, 0), (64, 16), (200, 40)]
SEPARATOR_SETS: list[list[str] | None] = [
    None,
    ["\n\n", "\n", " ", ""],
    ["\n\n", "\n", " "],
    [".", " "],
    ["。", "！", "？", ""],
    ["  ", "\n\n\n", ""],
    ["abab", "ab", ""],
]


@pytest.fixture(autouse=True)
def _quiet_langchain() -> Iterator[None]:
    # LangChain logs a warning for each chunk over chunk_size (when no separator fits).
    logger = logging.getLogger("langchain_text_splitters")
    level = logger.level
    logger.setLevel(logging.ERROR)
    yield
    logger.setLevel(level)


@pytest.fixture(params=["walk", "bulk"])
def merge(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test with each way of merging a text's pieces: walked chunk by chunk (with
    the eager split where the walk cannot go), or all at once by the bulk merge, which the
    splitter otherwise keeps for long texts of few pieces per chunk."""
    if request.param == "bulk":
        monkeypatch.setattr(_bulk, "BULK_MIN_CHUNKS", 0)
        monkeypatch.setattr(_bulk, "BULK_MAX_PIECES", math.inf)
    else:
        monkeypatch.setattr(_bulk, "BULK_MIN_CHUNKS", math.inf)
    return str(request.param)


def _pair(
    size: int, overlap: int, seps: list[str] | None, keep: KeepSeparator, strip: bool = True
) -> tuple[RecursiveCharacterSplitter, RecursiveCharacterTextSplitter]:
    ours = RecursiveCharacterSplitter(
        size, overlap, separators=seps, keep_separator=keep, strip_whitespace=strip
    )
    theirs = RecursiveCharacterTextSplitter(
        chunk_size=size,
        chunk_overlap=overlap,
        separators=list(DEFAULT_SEPARATORS) if seps is None else seps,
        keep_separator=True if keep == "start" else keep,
        strip_whitespace=strip,
        length_function=len,
    )
    return ours, theirs


@pytest.mark.parametrize("keep", KEEP_MODES)
@pytest.mark.parametrize("name", sorted(TEXTS))
@pytest.mark.usefixtures("merge")
def test_same_chunks_as_langchain(name: str, keep: KeepSeparator) -> None:
    text = TEXTS[name]
    for size, overlap in SIZES:
        for seps in SEPARATOR_SETS:
            for strip in (True, False):
                ours, theirs = _pair(size, overlap, seps, keep, strip)
                assert ours.split_text(text) == theirs.split_text(text), (size, overlap, seps)


@pytest.mark.parametrize("keep", KEEP_MODES)
@pytest.mark.usefixtures("merge")
def test_same_chunks_as_langchain_on_random_texts(keep: KeepSeparator) -> None:
    rng = random.Random(f"parity-{keep}")
    tokens = ["word", "ab", " ", "  ", ". ", "。", "\n", "\n\n", "\n\n\n", "😀", "中文", "？", "aa"]
    for _ in range(600):
        text = "".join(rng.choice(tokens) for _ in range(rng.randint(0, 50)))
        size = rng.randint(1, 40)
        overlap = rng.randint(0, size)
        seps = rng.choice(SEPARATOR_SETS)
        ours, theirs = _pair(size, overlap, seps, keep, rng.random() < 0.8)
        assert ours.split_text(text) == theirs.split_text(text), (text, size, overlap, seps)


@pytest.mark.usefixtures("merge")
def test_large_text_matches_langchain_in_every_mode() -> None:
    text = "\n\n".join([ENGLISH, CODE, CHINESE, MIXED, EMOJI, RUNS] * 40)
    for keep in KEEP_MODES:
        for size, overlap in ((200, 20), (1000, 200), (4000, 400)):
            ours, theirs = _pair(size, overlap, None, keep)
            assert ours.split_text(text) == theirs.split_text(text)


def test_true_means_start() -> None:
    assert RecursiveCharacterSplitter(keep_separator=True).keep_separator == "start"


def test_default_keeps_sentence_punctuation_with_its_sentence() -> None:
    splitter = RecursiveCharacterSplitter(chunk_size=12, chunk_overlap=0)
    chunks = splitter.split_text("第一句话。第二句话。第三句话。")
    assert chunks == ["第一句话。第二句话。", "第三句话。"]
    assert not any(c in {"。", ".", "？", "！"} for c in chunks)


def test_lengths_are_code_points() -> None:
    splitter = RecursiveCharacterSplitter(chunk_size=3, chunk_overlap=0, separators=[""])
    assert splitter.split_text("😀😀😀😀😀") == ["😀😀😀", "😀😀"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"chunk_size": 0}, "chunk_size must be >= 1"),
        ({"chunk_size": -5}, "chunk_size must be >= 1"),
        ({"chunk_size": 10, "chunk_overlap": -1}, "chunk_overlap must be >= 0"),
        ({"chunk_size": True}, "chunk_size must be an int"),
        ({"chunk_size": 10.0}, "chunk_size must be an int"),
        ({"chunk_size": 10, "chunk_overlap": 11}, "must not exceed chunk_size"),
        ({"separators": []}, "separators"),
        ({"keep_separator": "middle"}, "keep_separator"),
    ],
)
def test_constructor_errors(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        RecursiveCharacterSplitter(**kwargs)  # type: ignore[arg-type]


def test_overlap_equal_to_size_is_allowed() -> None:
    splitter = RecursiveCharacterSplitter(chunk_size=4, chunk_overlap=4, separators=[""])
    assert splitter.split_text("abcdef") == ["abcd", "bcde", "cdef"]


def test_split_documents_carry_source_and_position() -> None:
    doc = Document(id="notes", content=ENGLISH, metadata={"lang": "en"}, mime_type="text/markdown")
    chunks = RecursiveCharacterSplitter(chunk_size=80, chunk_overlap=20).split(doc)
    assert len(chunks) > 3
    for i, chunk in enumerate(chunks):
        meta = chunk.metadata
        assert chunk.id == f"notes#{i}"
        assert meta["source_id"] == "notes" and meta["lang"] == "en"
        assert meta["chunk_index"] == i and meta["chunk_count"] == len(chunks)
        start, end = meta["start_index"], meta["end_index"]
        assert isinstance(start, int) and isinstance(end, int)
        assert ENGLISH[start:end] == chunk.content
        assert chunk.mime_type == "text/markdown"
    # Overlap: some chunks start before the previous one ends.
    assert any(
        b.metadata["start_index"] < a.metadata["end_index"]  # type: ignore[operator]
        for a, b in zip(chunks, chunks[1:], strict=False)
    )


def test_spans_in_false_mode_bound_the_chunk() -> None:
    text = "alpha\n\n\n\nbeta gamma\n\ndelta"
    splitter = RecursiveCharacterSplitter(20, 0, keep_separator=False)
    spans = splitter.chunk_spans(text)
    assert [s.text for s in spans] == splitter.split_text(text)
    for span in spans:
        assert text[span.start] == span.text[0] and text[span.end - 1] == span.text[-1]


def test_whitespace_only_chunks_are_left_out_of_spans() -> None:
    splitter = RecursiveCharacterSplitter(chunk_size=1, chunk_overlap=0, separators=[""])
    assert splitter.split_text("a b") == ["a", " ", "b"]  # LangChain does this too
    assert [s.text for s in splitter.chunk_spans("a b")] == ["a", "b"]


def test_split_accepts_one_document_or_many() -> None:
    splitter = RecursiveCharacterSplitter(chunk_size=10, chunk_overlap=0)
    one = Document(id="a", content="one two three")
    assert [c.id for c in splitter.split(one)] == ["a#0", "a#1"]
    assert [c.id for c in splitter.split([one, Document(id="b", content="x")])] == [
        "a#0",
        "a#1",
        "b#0",
    ]
    assert splitter.split(Document(id="e", content="   ")) == []


def test_which_separators_can_be_walked() -> None:
    assert walkable("\n") and walkable("\n\n") and walkable("。") and walkable(". ")
    assert not walkable("abab") and not walkable("aba")


# -- properties ------------------------------------------------------------------------------

_ALPHABET = st.sampled_from(list("ab .。\n\t😀中") + ["\n\n", "  ", "word"])
_TEXT = st.lists(_ALPHABET, max_size=80).map("".join)
_SEPARATORS = st.lists(st.sampled_from(["\n\n", "\n", " ", ".", "。", "ab", "  "]), max_size=4)


@st.composite
def _splitters(draw: st.DrawFn) -> RecursiveCharacterSplitter:
    size = draw(st.integers(1, 40))
    overlap = draw(st.integers(0, size))
    seps = [*draw(_SEPARATORS), ""]
    keep = draw(st.sampled_from(KEEP_MODES))
    return RecursiveCharacterSplitter(size, overlap, separators=seps, keep_separator=keep)


@settings(max_examples=300, deadline=None)
@given(text=_TEXT, splitter=_splitters())
def test_no_chunk_exceeds_chunk_size_when_empty_separator_is_last(
    text: str, splitter: RecursiveCharacterSplitter
) -> None:
    assert all(len(chunk) <= splitter.chunk_size for chunk in splitter.split_text(text))


@settings(max_examples=300, deadline=None)
@given(text=_TEXT, splitter=_splitters())
def test_no_empty_or_blank_chunk_document(text: str, splitter: RecursiveCharacterSplitter) -> None:
    for chunk in splitter.split(Document(id="d", content=text)):
        assert chunk.content.strip()


@settings(max_examples=300, deadline=None)
@given(text=_TEXT, splitter=_splitters())
def test_each_chunk_is_found_at_its_start_index(
    text: str, splitter: RecursiveCharacterSplitter
) -> None:
    for chunk in splitter.split(Document(id="d", content=text)):
        start, end = chunk.metadata["start_index"], chunk.metadata["end_index"]
        assert isinstance(start, int) and isinstance(end, int)
        if splitter.keep_separator is False:
            # Pieces are joined by one separator: a run of separators in the source shrinks.
            assert text[start] == chunk.content[0] and text[end - 1] == chunk.content[-1]
        else:
            assert text[start:end] == chunk.content
            assert text.find(chunk.content, start) == start


def test_long_texts_of_few_pieces_per_chunk_are_merged_in_bulk() -> None:
    # Which merge runs is a matter of speed only (the parity tests above run both on every
    # case); this pins down the choice the benchmark's 1,000-character rows depend on.
    paragraphs = "\n\n".join(f"Paragraph {i}: " + "word " * (60 + i % 40) for i in range(400))
    assert _bulk.bulk_pays(paragraphs, "\n\n", 1000)  # about 2.5 paragraphs per chunk
    assert not _bulk.bulk_pays(paragraphs, "\n\n", 4000)  # about 10: the walk is faster
    assert not _bulk.bulk_pays(paragraphs[:20_000], "\n\n", 1000)  # too short to pay
    for keep in KEEP_MODES:
        ours, theirs = _pair(1000, 200, None, keep)
        assert ours.split_text(paragraphs) == theirs.split_text(paragraphs)
        spans = ours.chunk_spans(paragraphs)
        assert [s.text for s in spans] == ours.split_text(paragraphs)
        for span in spans:
            assert paragraphs[span.start : span.end] == span.text


@pytest.mark.parametrize("keep", KEEP_MODES)
def test_spans_are_the_same_whichever_merge(
    keep: KeepSeparator, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = "\n\n".join([ENGLISH, CODE, CHINESE, MIXED, EMOJI, RUNS, LONG_WORDS] * 30)
    for size, overlap in ((40, 10), (200, 20), (1000, 200)):
        splitter = RecursiveCharacterSplitter(size, overlap, keep_separator=keep)
        monkeypatch.setattr(_bulk, "BULK_MIN_CHUNKS", math.inf)
        walked = splitter.chunk_spans(text)
        monkeypatch.setattr(_bulk, "BULK_MIN_CHUNKS", 0)
        monkeypatch.setattr(_bulk, "BULK_MAX_PIECES", math.inf)
        assert splitter.chunk_spans(text) == walked
        monkeypatch.undo()


def _long_random_text(rng: random.Random) -> str:
    """Paragraphs of prose, code, Chinese and emoji, some longer than 1,000 characters with no
    blank line, joined by runs of 1-4 newlines and now and then spaces at the edges."""
    words = ["slot", "fork", "merge", "checkpoint", "a", "the", "vector", "工具", "😀", "x_1"]
    paragraphs = []
    for _ in range(rng.randint(5, 60)):
        kind = rng.random()
        if kind < 0.5:
            sentences = [
                " ".join(rng.choice(words) for _ in range(rng.randint(3, 30))) + rng.choice(".!?。")
                for _ in range(rng.randint(1, 25 if rng.random() < 0.2 else 6))
            ]
            paragraphs.append(" ".join(sentences))
        elif kind < 0.8:
            lines = [f"def f{rng.randint(0, 99)}():"]
            lines += ["    " * rng.randint(1, 3) + "x = 1" for _ in range(rng.randint(1, 80))]
            paragraphs.append("\n".join(lines))
        else:
            paragraphs.append(
                "".join(rng.choice("机器学习会话检查点。，") for _ in range(rng.randint(5, 1500)))
            )
        if rng.random() < 0.1:
            paragraphs[-1] = " " * rng.randint(1, 3) + paragraphs[-1] + " "
    seps = ["\n\n"] * 8 + ["\n\n\n", "\n\n\n\n", "\n", "\n\n \n\n"]
    return "".join(p + rng.choice(seps) for p in paragraphs)


@pytest.mark.parametrize("keep", KEEP_MODES)
@pytest.mark.usefixtures("merge")
def test_long_random_texts_match_langchain_at_the_benchmark_sizes(keep: KeepSeparator) -> None:
    # The benchmark's sizes (bench/rag.py), on long texts of varied pieces: long pieces split
    # further, runs of separators (empty pieces when dropped), whitespace at chunk edges.
    rng = random.Random(f"long-{keep}")
    for _ in range(12):
        text = _long_random_text(rng)
        for size, overlap in ((200, 20), (1000, 200), (4000, 400)):
            ours, theirs = _pair(size, overlap, None, keep)
            assert ours.split_text(text) == theirs.split_text(text), (size, overlap)
            spans = ours.chunk_spans(text)
            assert [s.text for s in spans] == [c for c in ours.split_text(text) if c.strip()]


# -- long texts, hypothesis ------------------------------------------------------------------

_PIECE_TOKENS = st.sampled_from(
    ["slot", "fork", "a", "the ", " ", "  ", "\t", ". ", ".", "。", "！", "？", "工具", "会话"]
    + ["😀", "x_1 = call(a, 1)", "\n", "\n    ", "!", "?"]
)
_PARAGRAPH_SEPARATORS = st.sampled_from(
    ["\n\n", "\n\n", "\n\n", "\n\n\n", "\n\n\n\n", "\n\n\n\n\n", "\n", " \n\n", "\n\n ", ""]
)


@st.composite
def _long_texts(draw: st.DrawFn) -> str:
    """Paragraphs of a few tokens repeated (some longer than 4,000 characters, with or without
    a separator inside), joined by runs of newlines, now and then whitespace at either end."""
    paragraphs = []
    for _ in range(draw(st.integers(0, 30))):
        tokens = "".join(draw(st.lists(_PIECE_TOKENS, min_size=1, max_size=8)))
        paragraphs.append(tokens * draw(st.integers(1, 4500 // len(tokens) + 1)))
        paragraphs.append(draw(_PARAGRAPH_SEPARATORS))
    lead = draw(st.sampled_from(["", "\n\n", " ", "\n\n\n"]))
    return lead + "".join(paragraphs)


@contextmanager
def _merging(merge: str) -> Iterator[None]:
    """The way long texts' pieces are merged, as in the ``merge`` fixture (hypothesis runs
    many examples in one test call, so a function-scoped monkeypatch will not do)."""
    saved = _bulk.BULK_MIN_CHUNKS, _bulk.BULK_MAX_PIECES
    if merge == "bulk":
        _bulk.BULK_MIN_CHUNKS, _bulk.BULK_MAX_PIECES = 0, math.inf  # type: ignore[assignment]
    elif merge == "walk":
        _bulk.BULK_MIN_CHUNKS = math.inf  # type: ignore[assignment]
    try:
        yield
    finally:
        _bulk.BULK_MIN_CHUNKS, _bulk.BULK_MAX_PIECES = saved


@settings(max_examples=200, deadline=None)
@given(
    text=_long_texts(),
    keep=st.sampled_from(KEEP_MODES),
    size_overlap=st.sampled_from([(200, 20), (1000, 200), (4000, 400), (1000, 0), (300, 300)]),
    merge=st.sampled_from(["walk", "bulk", "default"]),
)
def test_long_texts_match_langchain_whichever_merge(
    text: str, keep: KeepSeparator, size_overlap: tuple[int, int], merge: str
) -> None:
    # The benchmark's sizes and a few edges (no overlap, overlap = size) on long texts: pieces
    # too long for a chunk, separators touching (empty pieces when dropped) or at the ends,
    # whitespace at chunk edges. split_text is LangChain's; chunk_spans agree with it.
    size, overlap = size_overlap
    ours, theirs = _pair(size, overlap, None, keep)
    with _merging(merge):
        chunks = ours.split_text(text)
        spans = ours.chunk_spans(text)
    assert chunks == theirs.split_text(text)
    assert [s.text for s in spans] == [c for c in chunks if not c.isspace()]
    for span in spans:
        if keep is False:
            assert text[span.start] == span.text[0] and text[span.end - 1] == span.text[-1]
        else:
            assert text[span.start : span.end] == span.text


_SORTED_INTS = st.lists(st.integers(-50, 50), max_size=60).map(sorted)


@settings(max_examples=300, deadline=None)
@given(sorted_=_SORTED_INTS, keys=_SORTED_INTS, ties_first=st.booleans())
def test_bulk_ranks_are_searchsorted_for_keys_that_never_decrease(
    sorted_: list[int], keys: list[int], ties_first: bool
) -> None:
    import numpy as np

    haystack, needles = np.array(sorted_, dtype=np.int64), np.array(keys, dtype=np.int64)
    expected = np.searchsorted(haystack, needles, side="right" if ties_first else "left")
    assert _bulk._ranks(haystack, needles, ties_first=ties_first).tolist() == expected.tolist()

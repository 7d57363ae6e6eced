"""Document: validation, immutability, constructors from text and files."""

from __future__ import annotations

from pathlib import Path

import pytest

from agcore_lab.errors import InvalidInputError
from agcore_lab.rag import Document
from agcore_lab.rag.documents import content_id


def test_from_text_gets_a_stable_content_id() -> None:
    a = Document.from_text("same text", metadata={"k": 1})
    b = Document.from_text("same text")
    assert a.id == b.id == content_id("same text")
    assert a.id.startswith("doc_") and len(a.id) == 20
    assert Document.from_text("other").id != a.id
    assert a.metadata == {"k": 1} and a.mime_type == "text/plain"
    assert Document.from_text("x", id="mine").id == "mine"


def test_documents_are_immutable_and_validated() -> None:
    doc = Document(id="a", content="text")
    with pytest.raises(ValueError, match="frozen"):  # pydantic's error: not a constructor
        doc.content = "changed"  # type: ignore[misc]
    with pytest.raises(InvalidInputError):
        Document(id="", content="x")
    with pytest.raises(InvalidInputError):
        Document(id="a", content="x", mime_type="markdown")
    with pytest.raises(InvalidInputError):
        Document(id="a", content="x", metadata={"bad": object()})
    with pytest.raises(InvalidInputError, match="NaN") as caught:
        Document(id="a", content="x", metadata={"n": float("nan")})
    assert caught.value.errors and caught.value.errors[0]["loc"] == ("metadata",)


def test_repr_is_short() -> None:
    text = repr(Document(id="a", content="x" * 500))
    assert len(text) < 140 and "..." in text


def test_from_file_reads_text_and_guesses_the_type(tmp_path: Path) -> None:
    md = tmp_path / "notes.md"
    md.write_text("# Title\n\n中文 and emoji 😀", encoding="utf-8")
    doc = Document.from_file(md, metadata={"topic": "t"})
    assert doc.content == "# Title\n\n中文 and emoji 😀"
    assert doc.id == md.as_posix()
    assert doc.mime_type == "text/markdown"
    assert doc.metadata == {
        "path": md.as_posix(),
        "name": "notes.md",
        "suffix": ".md",
        "topic": "t",
    }
    txt = tmp_path / "a.unknownext"
    txt.write_text("plain", encoding="utf-8")
    assert Document.from_file(txt, id="x").mime_type == "text/plain"
    assert Document.from_file(txt, mime_type="text/csv").mime_type == "text/csv"


def test_from_file_errors_are_clear(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="cannot read"):
        Document.from_file(tmp_path / "missing.md")
    binary = tmp_path / "blob.txt"
    binary.write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(InvalidInputError, match="utf-8"):
        Document.from_file(binary)
    assert Document.from_file(binary, encoding="latin-1").content.endswith("bad")

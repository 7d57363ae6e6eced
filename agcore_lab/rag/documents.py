"""``Document``: a piece of text with an id, metadata and a MIME type.

Documents are what you ingest and what retrieval returns. A chunk made by the splitter is a
``Document`` too, whose metadata names its source (``source_id``), its place among the source's
chunks (``chunk_index`` / ``chunk_count``) and its span in the source text (``start_index`` /
``end_index``).
"""

from __future__ import annotations

import hashlib
import mimetypes
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field, JsonValue, field_validator

from agcore_lab.checks import CheckedModel, check_json
from agcore_lab.errors import InvalidInputError

__all__ = ["Document", "content_id"]

# Suffixes ``mimetypes`` does not know everywhere (it reads the OS tables).
_MIME_BY_SUFFIX = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".txt": "text/plain",
    ".text": "text/plain",
    ".rst": "text/x-rst",
    ".py": "text/x-python",
    ".json": "application/json",
    ".csv": "text/csv",
    ".html": "text/html",
    ".htm": "text/html",
}


def content_id(text: str) -> str:
    """A stable id for ``text``: ``doc_`` and the first 16 hex digits of its SHA-256."""
    return "doc_" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


class Document(CheckedModel):
    """A text with an id, JSON metadata and a MIME type. Immutable.

    Attributes:
        id: Unique within a vector store. Re-ingesting a document with the same id replaces
            its chunks.
        content: The text.
        metadata: Any JSON values; vector-store filters match on these keys.
        mime_type: ``text/plain``, ``text/markdown``, ...

    Example:
        >>> doc = Document.from_text("Slots fork and merge.", metadata={"topic": "slots"})
        >>> doc.id, doc.metadata["topic"]
        ('doc_4f47bf9930781d12', 'slots')
    """

    model_config = ConfigDict(frozen=True)

    id: str = Field(min_length=1)
    content: str
    metadata: dict[str, JsonValue] = Field(default_factory=dict)
    mime_type: str = "text/plain"

    @field_validator("metadata")
    @classmethod
    def _finite(cls, value: dict[str, JsonValue]) -> dict[str, JsonValue]:
        check_json(value, "metadata")  # NaN is not JSON: a SQLite store could not keep it
        return value

    @field_validator("mime_type")
    @classmethod
    def _mime(cls, value: str) -> str:
        if "/" not in value:
            raise ValueError(f"mime_type must look like 'type/subtype', got {value!r}")
        return value

    def __repr__(self) -> str:
        text = self.content if len(self.content) <= 60 else self.content[:57] + "..."
        return f"Document(id={self.id!r}, content={text!r}, metadata={self.metadata!r})"

    @classmethod
    def from_text(
        cls,
        text: str,
        *,
        id: str | None = None,
        metadata: dict[str, JsonValue] | None = None,
        mime_type: str = "text/plain",
    ) -> Document:
        """A document holding ``text``.

        Args:
            text: The content.
            id: The id; by default derived from the content (:func:`content_id`), so the same
                text always gets the same id.
            metadata: JSON metadata.
            mime_type: The MIME type.
        """
        return cls(
            id=id if id is not None else content_id(text),
            content=text,
            metadata=dict(metadata or {}),
            mime_type=mime_type,
        )

    @classmethod
    def from_file(
        cls,
        path: str | Path,
        *,
        id: str | None = None,
        encoding: str = "utf-8",
        metadata: dict[str, JsonValue] | None = None,
        mime_type: str | None = None,
    ) -> Document:
        """A document read from a text file.

        Args:
            path: The file.
            id: The id; by default the path as given (POSIX form), so re-reading the same file
                replaces its chunks when re-ingested.
            encoding: The text encoding.
            metadata: Extra metadata, merged over ``path``, ``name`` and ``suffix``.
            mime_type: The MIME type; by default guessed from the suffix (``.md`` is
                ``text/markdown``), ``text/plain`` when unknown.

        Raises:
            InvalidInputError: The file cannot be read or decoded.
        """
        file = Path(path)
        try:
            text = file.read_text(encoding=encoding)
        except (OSError, UnicodeDecodeError, ValueError, LookupError) as exc:  # NUL, bad codec
            raise InvalidInputError(f"cannot read {file} as {encoding} text: {exc}") from exc
        meta: dict[str, JsonValue] = {
            "path": file.as_posix(),
            "name": file.name,
            "suffix": file.suffix,
        }
        meta.update(metadata or {})
        return cls(
            id=id if id is not None else file.as_posix(),
            content=text,
            metadata=meta,
            mime_type=mime_type or guess_mime_type(file),
        )

    @classmethod
    def trusted(cls, id: str, content: str, metadata: dict[str, Any], mime_type: str) -> Document:
        """Build without validation, for values that were validated when first stored."""
        return cls.model_construct(id=id, content=content, metadata=metadata, mime_type=mime_type)


def guess_mime_type(path: Path) -> str:
    """The MIME type for ``path``'s suffix (``text/plain`` when unknown)."""
    known = _MIME_BY_SUFFIX.get(path.suffix.lower())
    if known:
        return known
    guessed, _ = mimetypes.guess_type(path.name)
    return guessed or "text/plain"

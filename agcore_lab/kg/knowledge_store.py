"""``KnowledgeStore``: text knowledge entries with keyword and semantic search.

Keyword search is TF-IDF (scikit-learn's ``TfidfVectorizer``, unigrams and bigrams, refit
lazily on the next search after entries changed): the score of an entry is the cosine
similarity between its TF-IDF vector and the query's, in ``[0, 1]``. Semantic search, available
when the store is given an :class:`~agcore_lab.rag.embeddings.Embedding`, scores entries by the
cosine similarity of L2-normalized ``float32`` vectors, clipped at 0 (so also in ``[0, 1]``).
Entries scoring 0 are never returned. Ties are broken by id.

scikit-learn loads on the first keyword search, so importing this module stays fast. The
store lives in memory (no persistence).
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator

from agcore_lab.checks import CheckedModel
from agcore_lab.errors import InvalidInputError
from agcore_lab.rag._validate import check_k

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from agcore_lab.rag.embeddings import Embedding

__all__ = ["KnowledgeEntry", "KnowledgeStore", "ScoredEntry", "SearchMode"]

SearchMode = Literal["keyword", "semantic", "auto"]
"""``"auto"`` is semantic when the store has an embedding, keyword otherwise."""


class KnowledgeEntry(CheckedModel):
    """One piece of text knowledge.

    Args:
        id: Unique within the store.
        text: The text searched and returned.
        tags: Labels (searched with the text); duplicates are dropped, order kept.
        metadata: Any JSON detail.
    """

    model_config = ConfigDict(frozen=True)

    id: str = Field(min_length=1)
    text: str
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, JsonValue] = Field(default_factory=dict)

    @field_validator("tags")
    @classmethod
    def _unique_tags(cls, tags: list[str]) -> list[str]:
        if any(not tag for tag in tags):
            raise ValueError("tags must be non-empty strings")
        return list(dict.fromkeys(tags))

    @property
    def search_text(self) -> str:
        """What the search looks at: the text followed by the tags."""
        return " ".join([self.text, *self.tags])


class ScoredEntry(BaseModel):
    """A knowledge entry found by a search, with its score in ``[0, 1]``."""

    model_config = ConfigDict(frozen=True)

    entry: KnowledgeEntry
    score: float


class KnowledgeStore:
    """Text knowledge entries in memory, searched by keywords (TF-IDF) or by meaning.

    Args:
        entries: Entries to start with.
        embedding: Enables semantic search (any ``Embedding``, e.g. ``HashingEmbedding``).

    Example:
        >>> store = KnowledgeStore()
        >>> _ = store.add("fork", "Forking a slot copies its messages.", tags=["slots"])
        >>> _ = store.add("merge", "Merging brings a fork back.")
        >>> [(s.entry.id, s.score > 0) for s in store.search("forking slot", k=1)]
        [('fork', True)]

    Notes:
        Thread-safe: one lock guards the entries and the fitted indexes.
    """

    def __init__(
        self,
        entries: Iterable[KnowledgeEntry] = (),
        *,
        embedding: Embedding | None = None,
    ) -> None:
        self.embedding = embedding
        self._lock = threading.RLock()
        self._entries: dict[str, KnowledgeEntry] = {}
        self._vectors: dict[str, NDArray[np.float32]] = {}
        self._tfidf: tuple[builtins.list[str], Any, Any] | None = None  # (ids, vectorizer, matrix)
        for entry in entries:
            self.add_entry(entry)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(entries={len(self)}, semantic={self.embedding is not None})"

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, entry_id: object) -> bool:
        return entry_id in self._entries

    # -- entries ----------------------------------------------------------------------------

    def add_entry(self, entry: KnowledgeEntry) -> KnowledgeEntry:
        """Add ``entry``, or replace the one with its id."""
        vector = self._embed([entry.search_text])[0] if self.embedding is not None else None
        with self._lock:
            self._entries[entry.id] = entry
            if vector is not None:
                self._vectors[entry.id] = vector
            self._tfidf = None
        return entry

    def add(
        self,
        entry_id: str,
        text: str,
        *,
        tags: Iterable[str] = (),
        metadata: dict[str, JsonValue] | None = None,
    ) -> KnowledgeEntry:
        """Build a :class:`KnowledgeEntry` and add it (replacing one with the same id)."""
        return self.add_entry(
            KnowledgeEntry(id=entry_id, text=text, tags=list(tags), metadata=metadata or {})
        )

    def get(self, entry_id: str) -> KnowledgeEntry | None:
        """The entry with this id, or ``None``."""
        with self._lock:
            return self._entries.get(entry_id)

    def remove(self, entry_id: str) -> bool:
        """Remove an entry; ``False`` if it was not there."""
        with self._lock:
            if self._entries.pop(entry_id, None) is None:
                return False
            self._vectors.pop(entry_id, None)
            self._tfidf = None
            return True

    def list(self, tag: str | None = None) -> list[KnowledgeEntry]:
        """Every entry (or those with ``tag``), sorted by id."""
        with self._lock:
            entries = sorted(self._entries.values(), key=lambda e: e.id)
        return [e for e in entries if tag is None or tag in e.tags]

    # -- search -----------------------------------------------------------------------------

    def search(
        self, query: str, k: int = 5, mode: SearchMode = "auto"
    ) -> builtins.list[ScoredEntry]:
        """The ``k`` entries best matching ``query``, best first (scores in ``(0, 1]``).

        Raises:
            InvalidInputError: ``k`` is negative, ``mode`` is unknown, or ``"semantic"`` was
                asked of a store without an embedding.
        """
        k = check_k(k)
        if mode == "auto":
            mode = "semantic" if self.embedding is not None else "keyword"
        if mode == "semantic":
            if self.embedding is None:
                raise InvalidInputError(
                    "semantic search needs an embedding: KnowledgeStore(embedding=...)"
                )
            ids, scores = self._semantic_scores(query)
        elif mode == "keyword":
            ids, scores = self._keyword_scores(query)
        else:
            raise InvalidInputError(f"mode must be 'keyword', 'semantic' or 'auto', got {mode!r}")
        if k == 0 or not ids:
            return []
        ranked = sorted(
            (
                (float(min(1.0, s)), i)
                for i, s in zip(ids, scores.tolist(), strict=True)
                if s > 1e-9
            ),
            key=lambda pair: (-pair[0], pair[1]),
        )[:k]
        with self._lock:
            return [
                ScoredEntry(entry=self._entries[i], score=s)
                for s, i in ranked
                if i in self._entries
            ]

    def _keyword_scores(self, query: str) -> tuple[builtins.list[str], NDArray[np.float64]]:
        with self._lock:
            if self._tfidf is None:
                self._tfidf = self._fit()
            ids, vectorizer, matrix = self._tfidf
        if vectorizer is None or not query.strip():
            return [], np.zeros(0)
        scores = (matrix @ vectorizer.transform([query]).T).toarray().ravel()
        return ids, np.asarray(scores, dtype=np.float64)

    def _fit(self) -> tuple[builtins.list[str], Any, Any]:
        from sklearn.feature_extraction.text import TfidfVectorizer

        ids = sorted(self._entries)
        if not ids:
            return [], None, None
        vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True)
        try:
            matrix = vectorizer.fit_transform([self._entries[i].search_text for i in ids])
        except ValueError:  # empty vocabulary: no entry has a word in it
            return [], None, None
        return ids, vectorizer, matrix

    def _semantic_scores(self, query: str) -> tuple[builtins.list[str], NDArray[np.float64]]:
        if not query.strip():
            return [], np.zeros(0)
        with self._lock:
            ids = sorted(self._vectors)
            if not ids:
                return [], np.zeros(0)
            matrix = np.stack([self._vectors[i] for i in ids])
        scores = matrix @ self._embed([query])[0]
        return ids, np.clip(scores.astype(np.float64), 0.0, 1.0)

    def _embed(self, texts: builtins.list[str]) -> NDArray[np.float32]:
        from agcore_lab.rag.embeddings import normalize_rows

        assert self.embedding is not None
        vectors = np.array(self.embedding.embed(texts), dtype=np.float32, order="C", copy=True)
        return normalize_rows(vectors)

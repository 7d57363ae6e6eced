"""Embeddings: the ``Embedding`` protocol and the offline ones.

* :class:`HashingEmbedding` — the default: scikit-learn's ``HashingVectorizer`` over word
  n-grams and character n-grams (so Chinese and other unspaced scripts work), L2-normalized.
  No vocabulary, no fitting, no download: stateless and deterministic across processes.
* :class:`MockEmbedding` — deterministic pseudo-random unit vectors, for tests.
* :class:`~agcore_lab.rag.openai_embedding.OpenAIEmbedding` — any OpenAI-compatible
  ``/embeddings`` endpoint.
* :class:`~agcore_lab.rag.sentence_embedding.SentenceTransformerEmbedding` — a real
  sentence-embedding model on the CPU (optional extra ``embeddings-st``).

scikit-learn loads on first use, so importing this module stays fast.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from agcore_lab.errors import InvalidInputError
from agcore_lab.rag._validate import check_count

__all__ = ["Embedding", "HashingEmbedding", "MockEmbedding", "as_texts", "normalize_rows"]

Vectors = NDArray[np.float32]

# Words: runs of letters and digits, except that each CJK character is a word of its own (those
# scripts do not put spaces between words; character unigrams and bigrams are the usual terms).
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_TOKEN = rf"(?u)[{_CJK}]|[^\W{_CJK}]+"


@runtime_checkable
class Embedding(Protocol):
    """Turns texts into vectors.

    ``embed(texts)`` returns a C-contiguous ``float32`` array of shape ``(len(texts), dim)``,
    one row per text, in order. Vector stores normalize rows themselves, so an embedding need
    not return unit vectors (the ones here do).
    """

    @property
    def dim(self) -> int:
        """The length of each vector."""
        ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One vector per text."""
        ...


def as_texts(texts: Sequence[str] | str) -> list[str]:
    """``texts`` as a list of strings; a single string is rejected (it would embed per
    character)."""
    if isinstance(texts, str):
        raise InvalidInputError("embed() takes a sequence of texts, not a single string")
    if not isinstance(texts, Iterable):
        raise InvalidInputError(f"embed() takes a sequence of texts, got {type(texts).__name__}")
    items = list(texts)
    for i, text in enumerate(items):
        if not isinstance(text, str):
            raise InvalidInputError(f"text {i} is a {type(text).__name__}, not a str")
    return items


def normalize_rows(vectors: Vectors) -> Vectors:
    """Scale each row to unit length in place (zero rows stay zero); return ``vectors``."""
    norms = np.sqrt(np.einsum("ij,ij->i", vectors, vectors))
    norms[norms == 0] = 1.0
    vectors /= norms[:, None]
    return vectors


class HashingEmbedding:
    """Hashed word and character n-grams, the offline default embedding.

    Each text becomes the weighted sum of two L2-normalized hashed count vectors: word
    n-grams (``word_ngrams``, lower-cased; each CJK character counts as a word, so Chinese
    gets character unigrams and bigrams) and character n-grams within words (``char_ngrams``,
    which match ``fork`` with ``forking``). The sum is L2-normalized. Similar wording gives
    similar vectors; similar meaning in other words does not (use a real model for that).

    Args:
        dim: The vector length (the number of hash buckets).
        word_ngrams: The ``(min, max)`` word n-gram lengths.
        char_ngrams: The ``(min, max)`` character n-gram lengths.
        char_weight: The weight of the character part, from 0 (words only) to 1.

    Raises:
        InvalidInputError: ``dim < 2``, bad n-gram ranges, or a weight outside [0, 1].

    Example:
        >>> embedding = HashingEmbedding(dim=256)
        >>> vectors = embedding.embed(["fork a slot", "forking slots", "检查点"])
        >>> vectors.shape, vectors.dtype.name
        ((3, 256), 'float32')
        >>> bool(vectors[0] @ vectors[1] > vectors[0] @ vectors[2])
        True

    Notes:
        Thread-safe: the vectorizers are built once (under a lock) and never change.
    """

    def __init__(
        self,
        dim: int = 1024,
        *,
        word_ngrams: tuple[int, int] = (1, 2),
        char_ngrams: tuple[int, int] = (2, 4),
        char_weight: float = 0.5,
    ) -> None:
        check_count(dim, "dim", minimum=2)
        for name, (low, high) in (("word_ngrams", word_ngrams), ("char_ngrams", char_ngrams)):
            if not 1 <= low <= high:
                raise InvalidInputError(f"{name} must be (min, max) with 1 <= min <= max")
        if not 0.0 <= char_weight <= 1.0:
            raise InvalidInputError(f"char_weight must be in [0, 1], got {char_weight}")
        self._dim = dim
        self.word_ngrams = word_ngrams
        self.char_ngrams = char_ngrams
        self.char_weight = char_weight
        self._vectorizers: tuple[Any, Any] | None = None
        self._lock = threading.Lock()

    @property
    def dim(self) -> int:
        """The vector length."""
        return self._dim

    def __repr__(self) -> str:
        return (
            f"HashingEmbedding(dim={self._dim}, word_ngrams={self.word_ngrams}, "
            f"char_ngrams={self.char_ngrams}, char_weight={self.char_weight})"
        )

    def _build(self) -> tuple[Any, Any]:
        with self._lock:
            if self._vectorizers is None:
                from sklearn.feature_extraction.text import HashingVectorizer

                common: dict[str, Any] = {
                    "n_features": self._dim,
                    "alternate_sign": False,
                    "norm": "l2",
                    "dtype": np.float32,
                    "lowercase": True,
                }
                words = HashingVectorizer(
                    analyzer="word", ngram_range=self.word_ngrams, token_pattern=_TOKEN, **common
                )
                chars = HashingVectorizer(
                    analyzer="char_wb", ngram_range=self.char_ngrams, **common
                )
                self._vectorizers = (words, chars)
            return self._vectorizers

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Unit vectors (zero for a text with no features, such as ``""``).

        Raises:
            InvalidInputError: ``texts`` is a single string or holds a non-string.
        """
        items = as_texts(texts)
        if not items:
            return np.zeros((0, self._dim), dtype=np.float32)
        words, chars = self._build()
        matrix = words.transform(items) * (1.0 - self.char_weight)
        matrix = matrix + chars.transform(items) * self.char_weight
        dense = np.ascontiguousarray(matrix.toarray(), dtype=np.float32)
        return normalize_rows(dense)


class MockEmbedding:
    """Deterministic pseudo-random unit vectors: the same text always gets the same vector,
    different texts nearly orthogonal ones. For tests.

    Args:
        dim: The vector length.
        seed: Mixed into every vector; different seeds give unrelated embeddings.

    Example:
        >>> mock = MockEmbedding(dim=8)
        >>> a, b = mock.embed(["x", "x"])
        >>> bool((a == b).all()), round(float(a @ a), 5)
        (True, 1.0)
    """

    def __init__(self, dim: int = 64, *, seed: int = 0) -> None:
        check_count(dim, "dim")
        self._dim = dim
        self.seed = seed
        self.calls: list[list[str]] = []  # the batches embedded, for assertions in tests

    @property
    def dim(self) -> int:
        """The vector length."""
        return self._dim

    def __repr__(self) -> str:
        return f"MockEmbedding(dim={self._dim}, seed={self.seed})"

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One unit vector per text, derived from a hash of the text and the seed."""
        items = as_texts(texts)
        self.calls.append(items)
        out = np.empty((len(items), self._dim), dtype=np.float32)
        for row, text in enumerate(items):
            digest = hashlib.blake2b(
                text.encode("utf-8", "surrogatepass"), digest_size=16, key=str(self.seed).encode()
            ).digest()
            rng = np.random.default_rng(int.from_bytes(digest, "little"))
            out[row] = rng.standard_normal(self._dim, dtype=np.float32)
        return normalize_rows(out)

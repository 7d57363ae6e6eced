"""Model-call records of OpenAIChatModel requests over a real HTTP server on 127.0.0.1."""

from __future__ import annotations

from typing import Any

import pytest

from agcore_lab import Agent, OpenAIChatModel, ReplayModel, SessionManager, SqliteStore

pytestmark = pytest.mark.timeout(30)


def _completion(text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14},
    }


def test_a_real_endpoint_call_is_recorded_with_params_and_retries(openai_server: Any) -> None:
    openai_server.add_json(503, {"error": {"message": "busy"}})
    openai_server.add_json(200, _completion("Hello there!"))
    model = OpenAIChatModel(
        "gpt-4o-mini",
        base_url=openai_server.url,
        api_key="sk-test",
        backoff_base=0.01,
        extra_body={"temperature": 0.2},
    )
    manager = SessionManager(SqliteStore(":memory:"))
    sid = manager.create_sync(Agent(name="live", system_prompt="Be kind.", model=model))
    assert manager.submit_turn_sync(sid, "Hello").reply == "Hello there!"
    (call,) = manager.model_calls_sync(sid)
    assert call.retries == 1 and call.status == "ok"
    assert call.params == {"temperature": 0.2} and call.model == "gpt-4o-mini"
    assert call.usage.prompt_tokens == 11 and call.finish_reason == "stop"
    # What the server got is what the record says was sent.
    sent = openai_server.requests[-1].body["messages"]
    assert sent == [
        {"role": "system", "content": "Be kind."},
        {"role": "user", "content": "Hello"},
    ]
    assert [m.text for m in call.request_messages] == ["Be kind.", "Hello"]

    # The recording replays offline: same request, same hash, no request to the server.
    before = len(openai_server.requests)
    replay = ReplayModel(manager.model_calls_sync(sid))
    assert replay.model_name == "gpt-4o-mini" and replay.request_params == {"temperature": 0.2}
    again = manager.create_sync(Agent(name="live2", system_prompt="Be kind.", model=replay))
    assert manager.submit_turn_sync(again, "Hello").reply == "Hello there!"
    assert len(openai_server.requests) == before
    (replayed,) = manager.model_calls_sync(again)
    assert replayed.request_hash == call.request_hash and replayed.replayed

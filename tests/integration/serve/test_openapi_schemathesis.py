"""schemathesis against the app's own OpenAPI document (a bounded number of examples per
operation): no 500s, and every error a valid problem document."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from agcore_lab import (
    Agent,
    ScriptedModel,
    SessionManager,
    SqliteStore,
    Tool,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from agcore_lab.serve import create_app

TOKEN = "schema-token"
PROBLEM_KEYS = {"type", "title", "status", "detail"}


def _transfer(to: str, amount: int) -> str:
    """Move money."""
    return f"sent {amount} to {to}"


def _script(messages: Any) -> Any:
    if isinstance(messages[-1], UserMessage):
        return ToolCall(name="transfer", arguments={"to": "u2", "amount": 100})
    return "done" if isinstance(messages[-1], ToolMessage) else "?"


@pytest.fixture(scope="module")
def api_app(tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = Path(tmp_path_factory.mktemp("schema")) / "lab.db"
    agent = Agent(
        name="bank",
        model=ScriptedModel(_script),
        tools=[Tool.from_function(_transfer, requires_approval=True)],
    )
    manager = SessionManager(SqliteStore(path), agents=[agent])
    sid = manager.create_sync(agent)
    manager.submit_turn_sync(sid, "send 100 to u2")  # something to find: a pending call
    return create_app(manager, token=TOKEN)


@pytest.fixture(scope="module")
def api_schema(api_app: Any) -> Any:
    return schemathesis.openapi.from_asgi("/openapi.json", api_app)


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_no_500_and_every_error_is_a_problem_document(case: Any) -> None:
    response = case.call(headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code < 500, (case.method, case.path, response.text[:500])
    if response.status_code >= 400:
        content_type = response.headers.get("content-type", "")
        if isinstance(content_type, list):
            content_type = content_type[0]
        assert content_type.startswith("application/problem+json"), content_type
        body = json.loads(response.text)
        assert PROBLEM_KEYS <= set(body), body
        assert body["status"] == response.status_code
        assert body["type"].startswith("https://agcore-lab.dev/problems/")
        assert isinstance(body["title"], str) and isinstance(body["detail"], str)

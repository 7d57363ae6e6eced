"""Route tests: the app from ``create_app`` driven by httpx (FastAPI's ``TestClient``).

``Lab`` is a manager on a SQLite file with a ``bank`` agent whose ``transfer`` tool needs
approval and counts its runs, and a ``quick`` agent whose approvals expire in 0.2 s.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from agcore_lab import (
    Agent,
    Message,
    ScriptedModel,
    SessionManager,
    SqliteStore,
    Tool,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from agcore_lab.serve import create_app

TOKEN = "s3cret-token"
PROBLEM = "application/problem+json"


@dataclass
class Lab:
    """A manager, its app, an authenticated client and the tool's runs."""

    path: Path
    runs: list[dict[str, Any]] = field(default_factory=list)
    seen: list[list[Message]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.manager = SessionManager(
            SqliteStore(self.path), agents=[self._agent("bank", None), self._agent("quick", 0.2)]
        )

    def _agent(self, name: str, timeout: float | None) -> Agent:
        def transfer(to: str, amount: int) -> str:
            """Move money."""
            self.runs.append({"to": to, "amount": amount})
            return f"sent {amount} to {to}"

        def script(messages: Sequence[Message]) -> Any:
            self.seen.append(list(messages))
            if isinstance(messages[-1], UserMessage):
                return ToolCall(name="transfer", arguments={"to": "u2", "amount": 100})
            last = messages[-1]
            return "done" if isinstance(last, ToolMessage) and not last.is_error else "refused"

        tool = Tool.from_function(transfer, requires_approval=True, approval_timeout=timeout)
        return Agent(name=name, model=ScriptedModel(script), tools=[tool])

    def app(self, **options: Any) -> Any:
        options.setdefault("token", TOKEN)
        return create_app(self.manager, **options)

    def client(self, app: Any = None, *, auth: bool = True) -> TestClient:
        headers = {"Authorization": f"Bearer {TOKEN}"} if auth else {}
        return TestClient(app or self.app(), headers=headers)

    def session(self, client: TestClient, agent: str = "bank") -> str:
        answer = client.post("/sessions", json={"agent": agent})
        assert answer.status_code == 201, answer.text
        return str(answer.json()["session_id"])

    def interrupted(self, client: TestClient, agent: str = "bank") -> tuple[str, dict[str, Any]]:
        sid = self.session(client, agent)
        turn = client.post(f"/sessions/{sid}/turns", json={"text": "send 100 to u2"})
        assert turn.status_code == 200, turn.text
        call = turn.json()["pending_tool_call"]
        assert call["status"] == "PENDING_APPROVAL"
        return sid, call


def resume_url(sid: str, call: dict[str, Any]) -> str:
    return f"/sessions/{sid}/runs/{call['run_id']}/interrupts/{call['interrupt_id']}/resume"


def assert_problem(answer: Any, status: int, slug: str | None = None) -> dict[str, Any]:
    """The answer is a problem document with this status (and type slug)."""
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"].startswith(PROBLEM)
    body: dict[str, Any] = answer.json()
    assert body["status"] == status
    assert {"type", "title", "detail"} <= set(body)
    assert body["type"].startswith("https://agcore-lab.dev/problems/")
    if slug is not None:
        assert body["type"].endswith("/" + slug), body["type"]
    return body


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    made = Lab(tmp_path / "lab.db")
    yield made
    made.manager.store.close()


@pytest.fixture
def client(lab: Lab) -> Iterator[TestClient]:
    with lab.client() as made:
        yield made

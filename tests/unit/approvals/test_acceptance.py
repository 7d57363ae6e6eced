"""Issue 4's acceptance snippet, run exactly as written, then checked in detail."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from agcore_lab import AssistantMessage, ScriptedModel, SqliteStore, ToolMessage, UserMessage

# Exactly the issue's text (one backslash-newline only splits a long source line).
SNIPPET = '''
from agcore_lab import (Agent, ConflictError, ScriptedModel, SessionManager, SqliteStore, Tool,
                        ToolCall)

def transfer(to: str, amount: int) -> str:
    """Move money."""
    return f"sent {amount} to {to}"

model = ScriptedModel([ToolCall(name="transfer", arguments={"to": "u2", "amount": 100}), "done"])
agent = Agent(name="bank", model=model, \
tools=[Tool.from_function(transfer, requires_approval=True)])
manager = SessionManager(SqliteStore("lab.db"))
sid = manager.create_sync(agent)
result = manager.submit_turn_sync(sid, "send 100 to u2")
call = result.pending_tool_call                      # status "PENDING_APPROVAL"
final = manager.resume_sync(sid, call.run_id, call.interrupt_id, "approve")
assert final.reply == "done"
try:
    manager.resume_sync(sid, call.run_id, call.interrupt_id, "approve")
except ConflictError as err:
    assert err.to_problem()["status"] == 409
else:
    raise AssertionError("a second resume of the same call must conflict")
'''


CALL = {"name": "transfer", "arguments": {"to": "u2", "amount": 100}}
DOCS = Path(__file__).resolve().parents[3] / "docs" / "approvals.md"


def test_the_docs_show_the_snippet_and_their_blocks_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOCS.read_text(encoding="utf-8"), flags=re.S)
    assert blocks[0] == SNIPPET.lstrip("\n")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {}
    exec(compile(blocks[0], "docs/approvals.md", "exec"), namespace)
    # The restart block, run against the same file with a fresh pending call.
    manager = namespace["manager"]
    namespace["agent"].model = ScriptedModel([namespace["ToolCall"](**CALL), "done again"])
    waiting = manager.submit_turn_sync(namespace["sid"], "again").pending_tool_call
    assert waiting is not None
    namespace["call"] = waiting
    manager.store.close()
    restart = next(b for b in blocks if "manager.pending_calls()" in b)
    exec(compile(restart, "docs/approvals.md", "exec"), namespace)
    assert namespace["manager"].pending_calls() == []
    assert namespace["manager"].get_sync(namespace["sid"]).messages[-1].text == "done again"
    namespace["manager"].store.close()


def _counted(namespace: dict[str, Any], runs: list[dict[str, Any]]) -> None:
    """Wrap the snippet's tool body so each run is counted (the tool object stays the same)."""
    tool = namespace["agent"].tool_map["transfer"]
    body = tool.function

    def counting(**kwargs: Any) -> Any:
        runs.append(kwargs)
        return body(**kwargs)

    tool.function = counting


def test_the_issue_snippet_runs_in_one_piece(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {}
    exec(compile(SNIPPET, "issue-4-snippet", "exec"), namespace)
    assert namespace["final"].reply == "done"
    namespace["manager"].store.close()


def test_the_issue_snippet_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    runs: list[dict[str, Any]] = []
    # Run the snippet up to the turn, count the tool's runs, then run the rest of it.
    lines = SNIPPET.splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if line.startswith("result = "))
    namespace: dict[str, Any] = {}
    exec(compile("".join(lines[:cut]), "issue-4-snippet", "exec"), namespace)
    _counted(namespace, runs)
    exec(compile("".join(lines[cut:]), "issue-4-snippet", "exec"), namespace)
    assert (tmp_path / "lab.db").exists()

    manager, sid = namespace["manager"], namespace["sid"]
    result, call, final = namespace["result"], namespace["call"], namespace["final"]

    # The interrupted turn: the call waited, the tool had not run.
    assert result.status == "interrupted"
    assert call.status == "PENDING_APPROVAL"
    assert call.tool_name == "transfer" and call.tool_args == {"to": "u2", "amount": 100}
    assert call.run_id == result.run_id and call.session_id == sid

    # The tool ran exactly once, although two resumes were made.
    assert runs == [{"to": "u2", "amount": 100}]

    # The resumed turn: the tool's answer, then the model's final reply; same run and turn.
    assert final.status == "completed" and final.run_id == call.run_id
    assert final.turn_index == result.turn_index == 1
    assert [type(m) for m in final.messages] == [ToolMessage, AssistantMessage]
    tool_message = final.messages[0]
    assert isinstance(tool_message, ToolMessage)
    assert tool_message.content == "sent 100 to u2" and not tool_message.is_error
    assert tool_message.tool_call_id == call.tool_call_id
    history = manager.get_sync(sid).messages
    assert [type(m) for m in history] == [
        UserMessage,
        AssistantMessage,
        ToolMessage,
        AssistantMessage,
    ]
    assert history[-1].content == "done"

    # Nothing waits any more; the record says EXECUTED, with the result.
    assert manager.pending_calls() == []
    assert manager.pending_calls(sid) == []
    (record,) = manager.pending_calls(include_resolved=True)
    assert record.interrupt_id == call.interrupt_id
    assert record.status == "EXECUTED"
    assert record.result == "sent 100 to u2"
    assert record.decision == {"kind": "approve", "arguments": {"to": "u2", "amount": 100}}
    assert record.decided_at is not None and record.updated_at >= record.decided_at

    # The same holds for anyone reading the file afterwards.
    manager.store.close()
    again = SqliteStore(tmp_path / "lab.db")
    (stored,) = again.list_pending(include_resolved=True)
    assert stored.status == "EXECUTED" and stored.result == "sent 100 to u2"
    again.close()

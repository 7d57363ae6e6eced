"""%agcore magics in IPython's headless test shell (see docs/jupyter.md)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from IPython.testing.globalipapp import get_ipython, start_ipython
from IPython.utils.capture import CapturedIO, capture_output

from agcore_lab import Agent, AgentSession, ScriptedModel, SessionManager
from agcore_lab.jupyter import SlotDiffViewer
from agcore_lab.jupyter.magics import AgcoreMagics


@pytest.fixture(scope="module")
def ip() -> Any:
    # start_ipython() gives None when another test module started the test shell already.
    shell = start_ipython() or get_ipython()
    shell.run_line_magic("load_ext", "agcore_lab")
    return shell


@pytest.fixture
def magics(ip: Any) -> Iterator[AgcoreMagics]:
    instance = ip.magics_manager.registry["AgcoreMagics"]
    instance.sessions.clear()
    instance.last_session = "default"
    instance.last_manager_session = None
    names = set(ip.user_ns)
    yield instance
    for name in set(ip.user_ns) - names:
        del ip.user_ns[name]


def line(ip: Any, text: str) -> CapturedIO:
    with capture_output() as captured:
        result = ip.run_line_magic("agcore", text)
    assert result is None  # nothing noisy as Out[]
    return captured


def cell(ip: Any, text: str, body: str) -> CapturedIO:
    with capture_output() as captured:
        ip.run_cell_magic("agcore", text, body)
    return captured


def _user_session(*replies: str) -> AgentSession:
    return AgentSession(Agent(name="mine", model=ScriptedModel(list(replies))))


def test_load_ext_registers_the_magic(ip: Any, magics: AgcoreMagics) -> None:
    assert "agcore" in ip.magics_manager.magics["line"]
    assert "agcore" in ip.magics_manager.magics["cell"]
    assert isinstance(magics, AgcoreMagics)


def test_help_lists_every_command(ip: Any, magics: AgcoreMagics) -> None:
    out = line(ip, "help").stdout
    for command in ("%%agcore chat", "slots", "fork NAME", "switch NAME", "merge NAME", "diff A B"):
        assert command in out
    assert "--strategy append|replace|summarize" in out
    assert "--no-switch" in out


def test_chat_creates_a_kept_session_and_shows_the_reply(ip: Any, magics: AgcoreMagics) -> None:
    captured = cell(ip, "chat", "What is a slot?\n")
    assert "created session 'default'" in captured.stdout
    assert captured.stderr == ""
    assert [o.data for o in captured.outputs] == [
        {"text/markdown": "[scripted] What is a slot?", "text/plain": "[scripted] What is a slot?"}
    ]
    session = magics.sessions["default"]
    assert [m.text for m in session.messages] == ["What is a slot?", "[scripted] What is a slot?"]
    # Second chat: same session, no new note.
    captured = cell(ip, "chat", "again")
    assert "created" not in captured.stdout
    assert len(session.messages) == 4


def test_chat_with_a_session_variable(ip: Any, magics: AgcoreMagics) -> None:
    mine = _user_session("from my model")
    ip.user_ns["mine"] = mine
    captured = cell(ip, "chat --session mine", "hello")
    assert captured.outputs[0].data["text/plain"] == "from my model"
    assert "created" not in captured.stdout
    assert magics.sessions == {}
    assert magics.last_session == "mine"
    # Without --session, the session used last.
    cell(ip, "chat", "and now?")
    assert len(mine.messages) == 4


def test_chat_named_kept_session(ip: Any, magics: AgcoreMagics) -> None:
    captured = cell(ip, "chat --session lab", "hi")
    assert "created session 'lab'" in captured.stdout
    assert magics.sessions["lab"].agent.name == "lab"
    assert magics.last_session == "lab"


def test_chat_needs_a_cell(ip: Any, magics: AgcoreMagics) -> None:
    captured = line(ip, "chat")
    assert captured.stderr.startswith("agcore: chat sends the cell")
    assert magics.sessions == {}


def test_slots_table(ip: Any, magics: AgcoreMagics) -> None:
    mine = _user_session()
    mine.fork_slot_sync("alt", switch=True)
    ip.user_ns["mine"] = mine
    captured = line(ip, "slots --session mine")
    assert captured.stdout == "" and captured.stderr == ""
    (output,) = captured.outputs
    lines = output.data["text/plain"].splitlines()
    assert lines[0].split() == ["slot", "messages", "mode", "parent"]
    assert lines[1].split() == ["main", "0", "full"]
    assert lines[2].split() == ["*", "alt", "0", "full", "main"]
    assert "<td>alt</td>" in output.data["text/html"]


def test_fork_switches_by_default(ip: Any, magics: AgcoreMagics) -> None:
    cell(ip, "chat", "hi")
    session = magics.sessions["default"]
    out = line(ip, "fork alt").stdout
    assert out.strip() == "forked 'main' into 'alt' (2 messages); current slot: 'alt'"
    assert session.current_slot_id == "alt"
    assert session.slots["alt"].parent_slot_id == "main"


def test_fork_no_switch_and_from(ip: Any, magics: AgcoreMagics) -> None:
    cell(ip, "chat", "hi")
    session = magics.sessions["default"]
    line(ip, "fork alt --no-switch")
    assert session.current_slot_id == "main"
    line(ip, "fork deeper --from alt --no-switch")
    assert session.slots["deeper"].parent_slot_id == "alt"
    assert session.current_slot_id == "main"


def test_switch(ip: Any, magics: AgcoreMagics) -> None:
    cell(ip, "chat", "hi")
    line(ip, "fork alt")
    out = line(ip, "switch main").stdout
    assert out.strip() == "current slot: 'main' (2 messages)"
    assert magics.sessions["default"].current_slot_id == "main"


def test_merge_default_and_strategy(ip: Any, magics: AgcoreMagics) -> None:
    cell(ip, "chat", "hi")
    line(ip, "fork alt")
    cell(ip, "chat", "branch work")
    session = magics.sessions["default"]
    out = line(ip, "merge alt").stdout
    assert out.strip() == "merged 'alt' into 'main' (append): 2 -> 4 messages"
    assert [m.id for m in session.slots["main"].messages] == [
        m.id for m in session.slots["alt"].messages
    ]
    line(ip, "fork other --from main")
    cell(ip, "chat", "other work")
    out = line(ip, "merge other --into alt --strategy Replace").stdout
    assert out.strip() == "merged 'other' into 'alt' (replace): 4 -> 6 messages"


def test_diff_displays_a_viewer(ip: Any, magics: AgcoreMagics) -> None:
    cell(ip, "chat", "hi")
    line(ip, "fork alt")
    cell(ip, "chat", "more")
    captured = line(ip, "diff main alt")
    (output,) = captured.outputs
    assert "application/vnd.jupyter.widget-view+json" in output.data
    assert output.data["text/plain"].startswith("SlotDiffViewer('main' vs 'alt'")
    assert "2 only right" in output.data["text/plain"]
    assert SlotDiffViewer.__name__ in output.data["text/plain"]


def test_run_cell_goes_through_the_transformers(ip: Any, magics: AgcoreMagics) -> None:
    with capture_output() as captured:
        result = ip.run_cell("%%agcore chat\nthrough run_cell")
    assert result.success
    assert captured.outputs[0].data["text/plain"] == "[scripted] through run_cell"
    with capture_output():
        result = ip.run_cell("x = %agcore slots")
    assert result.success and ip.user_ns["x"] is None


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("", "agcore: no command given; commands: chat, slots"),
        ("bogus", "agcore: unknown command 'bogus'; commands:"),
        ("slots", "agcore: no session yet: run '%%agcore chat' first"),
        ("slots --session ghost", "agcore: no session 'ghost': no variable of that name"),
        ("fork", "agcore: the following arguments are required: name"),
        ("merge alt --strategy sideways", "agcore: argument --strategy: invalid choice"),
    ],
)
def test_usage_errors_are_one_line(
    ip: Any, magics: AgcoreMagics, command: str, expected: str
) -> None:
    captured = line(ip, command)
    assert captured.stderr.startswith(expected)
    assert captured.stderr.count("\n") == 1
    assert "Traceback" not in captured.stderr
    assert captured.stdout == ""


def test_engine_errors_are_one_line(ip: Any, magics: AgcoreMagics) -> None:
    cell(ip, "chat", "hi")
    cases = {
        "switch nope": "agcore: no slot 'nope' in this session; slots: main\n",
        "fork main": "agcore: slot 'main' exists already; pick another name\n",
        "merge nope": "agcore: no slot 'nope' in this session; slots: main\n",
        "merge main --into main": "agcore: cannot merge a slot into itself\n",
        "diff main nope": "agcore: no slot 'nope' in this session; slots: main\n",
        "fork bad/name": "agcore: slot id 'bad/name' must be 1-64 letters",
    }
    for command, expected in cases.items():
        captured = line(ip, command)
        assert captured.stderr.startswith(expected), command
        assert captured.outputs == []
    assert list(magics.sessions["default"].slots) == ["main"]


def test_session_variable_of_the_wrong_type(ip: Any, magics: AgcoreMagics) -> None:
    ip.user_ns["notes"] = ["not", "a", "session"]
    captured = line(ip, "slots --session notes")
    assert captured.stderr == "agcore: variable 'notes' holds a list, not an AgentSession\n"


def test_model_errors_are_one_line(ip: Any, magics: AgcoreMagics) -> None:
    from agcore_lab.errors import ModelError

    def failing(_messages: object) -> str:
        raise ModelError("the backend said no\nsecond line")

    ip.user_ns["bad"] = _user_session()
    ip.user_ns["bad"].agent.model = ScriptedModel(failing)
    captured = cell(ip, "chat --session bad", "hi")
    assert captured.stderr == "agcore: the backend said no second line\n"
    assert ip.user_ns["bad"].messages == []


def test_core_and_extension_load_without_widgets() -> None:
    code = (
        "import sys, agcore_lab\n"
        "jupyter = {'IPython', 'ipywidgets', 'traitlets', 'anywidget'}\n"
        "assert not jupyter & set(sys.modules), 'core'\n"
        "import agcore_lab.jupyter.magics\n"
        "assert not {'ipywidgets', 'anywidget'} & set(sys.modules), 'magics'\n"
        "from agcore_lab.jupyter import SlotDiffViewer\n"
        "assert 'ipywidgets' in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


# -- session tree and time travel -------------------------------------------------------------


def _manager_with_turns(turns: int = 3) -> tuple[SessionManager, str]:
    manager = SessionManager(agents=[Agent(name="writer", model=ScriptedModel())])
    sid = manager.create_sync(manager.agents["writer"])
    for i in range(turns):
        manager.submit_turn_sync(sid, f"turn {i}")
    return manager, sid


def _widget(captured: CapturedIO) -> Any:
    (output,) = captured.outputs
    assert "application/vnd.jupyter.widget-view+json" in output.data
    return output.data["text/plain"]


def test_help_lists_the_manager_commands(ip: Any, magics: AgcoreMagics) -> None:
    out = line(ip, "help").stdout
    for command in (
        "%agcore sessions",
        "%agcore tree",
        "%agcore timeline [SESSION]",
        "%agcore checkpoint",
        "[--label L]",
        "%agcore rollback CKPT",
        "%agcore fork CKPT",
        "--manager VAR",
    ):
        assert command in out, command


def test_sessions_returns_a_dataframe(ip: Any, magics: AgcoreMagics) -> None:
    manager, sid = _manager_with_turns(2)
    ip.user_ns["manager"] = manager
    with capture_output() as captured:
        frame = ip.run_line_magic("agcore", "sessions")
    assert captured.stderr == ""
    assert list(frame["session_id"]) == [sid]
    assert list(frame["turn_index"]) == [2] and list(frame["live"]) == [True]
    with capture_output():
        assert ip.run_cell("df = %agcore sessions").success
    assert len(ip.user_ns["df"]) == 1


def test_tree_and_timeline_display_views(ip: Any, magics: AgcoreMagics) -> None:
    manager, sid = _manager_with_turns()
    ip.user_ns["manager"] = manager
    text = _widget(line(ip, "tree"))
    assert text == "SessionTreeBrowser(1 sessions, 1 live, selected=None)"
    # The only live session is picked, and remembered.
    text = _widget(line(ip, "timeline"))
    assert text.startswith(f"CheckpointTimeline('{sid}', 4 checkpoints, turn=3")
    assert magics.last_manager_session == sid
    other = manager.create_sync(manager.agents["writer"])
    text = _widget(line(ip, f"timeline {other}"))
    assert text.startswith(f"CheckpointTimeline('{other}', 1 checkpoints, turn=0")


def test_checkpoint_rollback_and_fork(ip: Any, magics: AgcoreMagics) -> None:
    manager, sid = _manager_with_turns()
    ip.user_ns["manager"] = manager
    ip.user_ns["sid"] = sid
    out = line(ip, 'checkpoint --session sid --label "before it"').stdout
    ckpt = manager.checkpointer.list_checkpoints_sync(sid)[0]
    assert out.strip() == f"checkpoint {ckpt.ckpt_id} of {sid} at turn 3, label 'before it'"
    assert ckpt.source == "manual" and ckpt.label == "before it"

    first = manager.checkpointer.list_checkpoints_sync(sid)[-2]  # turn 1
    out = line(ip, f"rollback {first.ckpt_id}").stdout
    recorded = manager.checkpointer.list_checkpoints_sync(sid)[0].ckpt_id
    assert out.strip() == f"rolled {sid} back to turn 1 ({first.ckpt_id}); recorded as {recorded}"
    assert manager.get_sync(sid).turn_index == 1

    out = line(ip, f"fork {ckpt.ckpt_id}").stdout
    child = manager.children_sync(sid)[0]
    assert out.strip() == (
        f"forked {sid} at turn 3 ({ckpt.ckpt_id}) into session {child}; current session: {child}"
    )
    assert manager.get_sync(child).turn_index == 3
    assert magics.last_manager_session == child
    out = line(ip, "checkpoint").stdout  # the session used last: the fork
    assert f" of {child} at turn 3" in out
    out = line(ip, f"fork {ckpt.ckpt_id} --no-switch -m manager").stdout
    assert out.strip().endswith(f"current session: {child}")
    assert len(manager.children_sync(sid)) == 2


def test_fork_of_a_slot_still_works_next_to_managers(ip: Any, magics: AgcoreMagics) -> None:
    manager, _ = _manager_with_turns(1)
    ip.user_ns["manager"] = manager
    cell(ip, "chat", "hi")
    out = line(ip, "fork --no-switch ckpt-like").stdout
    assert out.startswith("forked 'main' into 'ckpt-like'")
    assert "ckpt-like" in magics.sessions["default"].slots


def test_session_variable_may_hold_an_agent_session(ip: Any, magics: AgcoreMagics) -> None:
    manager, sid = _manager_with_turns(1)
    ip.user_ns["manager"] = manager
    ip.user_ns["live"] = manager.get_sync(sid)
    out = line(ip, "checkpoint -s live").stdout
    assert f" of {sid} at turn 1" in out


@pytest.mark.parametrize(
    ("setup", "command", "expected"),
    [
        ("none", "tree", "agcore: no SessionManager in the notebook: create one"),
        ("two", "sessions", "agcore: 2 SessionManagers in the notebook (m1, m2): pass --manager"),
        ("two", "tree --manager nope", "agcore: no variable 'nope': --manager names a variable"),
        ("two", "tree --manager notes", "agcore: variable 'notes' holds a list, not a Session"),
        ("empty", "checkpoint", "agcore: no live session to pick from: pass --session ID"),
        ("two_live", "timeline", "agcore: 2 live sessions to pick from: pass --session ID"),
        ("one", "rollback ckpt_nope", "agcore: no such checkpoint; list them with"),
        ("one", "fork ckpt_nope", "agcore: no such checkpoint; list them with"),
        ("one", "timeline ses_nope", "agcore: no such session in the store"),
        ("one", "rollback", "agcore: the following arguments are required: ckpt"),
        ("one", "timeline a --session b", "agcore: give the session once"),
        ("one", "checkpoint --session notes", "agcore: variable 'notes' holds a list, not a"),
    ],
)
def test_manager_command_errors_are_one_line(
    ip: Any, magics: AgcoreMagics, setup: str, command: str, expected: str
) -> None:
    ip.user_ns["notes"] = ["not", "a", "manager"]
    if setup in ("two", "two_live"):
        ip.user_ns["m1"], ip.user_ns["m2"] = SessionManager(), SessionManager()
        ip.user_ns["_hidden"] = ip.user_ns["m1"]  # underscore names (output cache) are skipped
    if setup == "two_live":
        manager, _ = _manager_with_turns(0)
        manager.create_sync(manager.agents["writer"])
        ip.user_ns["m1"] = ip.user_ns["_hidden"] = manager
        del ip.user_ns["m2"]
    if setup == "empty":
        ip.user_ns["manager"] = SessionManager()
    if setup == "one":
        ip.user_ns["manager"], _ = _manager_with_turns(1)
    captured = line(ip, command)
    assert captured.stderr.startswith(expected), captured.stderr
    assert captured.stderr.count("\n") == 1 and "Traceback" not in captured.stderr
    assert captured.stdout == "" and captured.outputs == []


# -- human approval -----------------------------------------------------------------------------


def _bank(timeout: float | None = None) -> tuple[SessionManager, list[tuple[str, int]]]:
    from agcore_lab import Tool, ToolCall

    runs: list[tuple[str, int]] = []

    def transfer(to: str, amount: int) -> str:
        """Move money."""
        runs.append((to, amount))
        return f"sent {amount} to {to}"

    def answer(messages: Any) -> str:
        return f"done: {messages[-1].text}"

    model = ScriptedModel(
        [ToolCall(name="transfer", arguments={"to": "u2", "amount": 100}), answer]
    )
    tool = Tool.from_function(transfer, requires_approval=True, approval_timeout=timeout)
    agent = Agent(name="bank", model=model, tools=[tool])
    manager = SessionManager(agents=[agent])
    sid = manager.create_sync(agent)
    assert manager.submit_turn_sync(sid, "send 100 to u2").status == "interrupted"
    return manager, runs


def test_help_lists_the_approval_commands(ip: Any, magics: AgcoreMagics) -> None:
    out = line(ip, "help").stdout
    for command in ("%agcore approvals", "%agcore approve ID", "%agcore reject ID", "--reason"):
        assert command in out, command
    assert "--args JSON" in out and "--rerun" in out


def test_approvals_returns_a_dataframe(ip: Any, magics: AgcoreMagics) -> None:
    manager, _ = _bank()
    ip.user_ns["bank"] = manager
    with capture_output() as captured:
        frame = ip.run_line_magic("agcore", "approvals")
    assert captured.stderr == ""
    (call,) = manager.pending_calls()
    assert list(frame["interrupt_id"]) == [call.interrupt_id]
    assert list(frame["tool_name"]) == ["transfer"] and list(frame["status"]) == [
        "PENDING_APPROVAL"
    ]
    assert frame["tool_args"][0] == {"to": "u2", "amount": 100}
    line(ip, f"approve {call.interrupt_id}")
    with capture_output():
        assert len(ip.run_line_magic("agcore", "approvals")) == 0
        everything = ip.run_line_magic("agcore", "approvals --all -m bank")
    assert list(everything["status"]) == ["EXECUTED"]


def test_approve_prints_the_result_and_the_reply(ip: Any, magics: AgcoreMagics) -> None:
    manager, runs = _bank()
    ip.user_ns["manager"] = manager
    (call,) = manager.pending_calls()
    out = line(ip, f"approve {call.interrupt_id}").stdout
    assert out == "Approved: transfer ran → sent 100 to u2; reply: done: sent 100 to u2\n"
    assert runs == [("u2", 100)]
    assert magics.last_manager_session == call.session_id
    # The second approval conflicts: one line, with the status; the tool does not run again.
    captured = line(ip, f"approve {call.interrupt_id}")
    assert captured.stderr.startswith("agcore: 409 Conflict: ")
    assert captured.stderr.count("\n") == 1 and captured.stdout == ""
    assert runs == [("u2", 100)]


def test_approve_with_edited_arguments(ip: Any, magics: AgcoreMagics) -> None:
    manager, runs = _bank()
    ip.user_ns["manager"] = manager
    (call,) = manager.pending_calls()
    iid = call.interrupt_id
    captured = line(ip, f"approve {iid} --args 'not json'")
    assert captured.stderr.startswith("agcore: --args: the arguments are not valid JSON")
    captured = line(ip, f"approve {iid} --args '{{\"to\": 3}}'")
    assert captured.stderr.startswith(
        "agcore: Not sent: invalid arguments for tool 'transfer': to: Input should be"
    )
    assert runs == [] and manager.pending_calls()[0].interrupt_id == iid
    out = line(ip, f'approve {iid} --args \'{{"to": "u3", "amount": 5}}\'').stdout
    assert out.startswith("Approved with edited arguments: transfer ran → sent 5 to u3;")
    assert runs == [("u3", 5)]


def test_approve_with_arguments_from_a_variable(ip: Any, magics: AgcoreMagics) -> None:
    manager, runs = _bank()
    ip.user_ns["manager"] = manager
    ip.user_ns["edited"] = {"to": "u4", "amount": 7}
    (call,) = manager.pending_calls()
    with capture_output() as captured:
        assert ip.run_cell(f"%agcore approve {call.interrupt_id} --args edited").success
    assert "sent 7 to u4" in captured.stdout and runs == [("u4", 7)]


def test_reject_with_a_reason(ip: Any, magics: AgcoreMagics) -> None:
    manager, runs = _bank()
    ip.user_ns["manager"] = manager
    (call,) = manager.pending_calls()
    out = line(ip, f'reject {call.interrupt_id} --reason "over the limit"').stdout
    assert out.startswith("Rejected transfer (over the limit); reply: done: Rejected by a person")
    assert "over the limit" in out and runs == []
    assert manager.pending_calls(include_resolved=True)[0].status == "REJECTED"


def test_approve_an_expired_call(ip: Any, magics: AgcoreMagics) -> None:
    import time

    manager, runs = _bank(timeout=0.1)
    ip.user_ns["manager"] = manager
    (call,) = manager.pending_calls()
    time.sleep(0.2)
    captured = line(ip, f"approve {call.interrupt_id}")
    assert captured.stderr.startswith("agcore: 410 Gone: this call expired")
    assert runs == []


def test_a_call_that_already_ran_needs_rerun(ip: Any, magics: AgcoreMagics) -> None:
    manager, runs = _bank()
    ip.user_ns["manager"] = manager
    (call,) = manager.pending_calls()
    while_pending = manager.checkpointer.list_checkpoints_sync(call.session_id)[0]
    line(ip, f"approve {call.interrupt_id}")
    manager.checkpointer.rollback_sync(call.session_id, while_pending.ckpt_id)
    (restored,) = manager.pending_calls()
    captured = line(ip, f"approve {restored.interrupt_id}")
    assert captured.stderr.startswith("agcore: 409 Conflict: this call already ran before")
    assert runs == [("u2", 100)]
    out = line(ip, f"approve {restored.interrupt_id} --rerun").stdout
    assert out.startswith("Approved: transfer ran → sent 100 to u2")
    assert runs == [("u2", 100), ("u2", 100)]


def test_approvals_panel(ip: Any, magics: AgcoreMagics) -> None:
    manager, _ = _bank()
    ip.user_ns["manager"] = manager
    text = _widget(line(ip, "approvals --panel"))
    assert text == "ApprovalPanel(1 waiting, 0 decided)"


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("approve int_nope", "agcore: no tool call 'int_nope' waits for approval in this store"),
        ("reject int_nope", "agcore: no tool call 'int_nope' waits for approval"),
        ("approve", "agcore: the following arguments are required: ID"),
        ("approve int_x --args '[1]'", "agcore: --args: the arguments must be a JSON object"),
    ],
)
def test_approval_command_errors_are_one_line(
    ip: Any, magics: AgcoreMagics, command: str, expected: str
) -> None:
    ip.user_ns["manager"], _ = _bank()
    captured = line(ip, command)
    assert captured.stderr.startswith(expected), captured.stderr
    assert captured.stderr.count("\n") == 1 and "Traceback" not in captured.stderr
    assert captured.stdout == "" and captured.outputs == []

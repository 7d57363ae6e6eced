"""%agcore magics in IPython's headless test shell (see JUPYTER.md)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from IPython.testing.globalipapp import start_ipython
from IPython.utils.capture import CapturedIO, capture_output

from agcore_lab import Agent, AgentSession, ScriptedModel
from agcore_lab.jupyter import SlotDiffViewer
from agcore_lab.jupyter.magics import AgcoreMagics


@pytest.fixture(scope="module")
def ip() -> Any:
    shell = start_ipython()
    shell.run_line_magic("load_ext", "agcore_lab")
    return shell


@pytest.fixture
def magics(ip: Any) -> Iterator[AgcoreMagics]:
    instance = ip.magics_manager.registry["AgcoreMagics"]
    instance.sessions.clear()
    instance.last_session = "default"
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
        "assert not {'IPython', 'ipywidgets', 'traitlets'} & set(sys.modules), 'core'\n"
        "import agcore_lab.jupyter.magics\n"
        "assert 'ipywidgets' not in sys.modules, 'magics'\n"
        "from agcore_lab.jupyter import SlotDiffViewer\n"
        "assert 'ipywidgets' in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr

"""The ``%agcore`` / ``%%agcore`` magics: slots and chat, then the session tree and time travel.

Load them with ``%load_ext agcore_lab``. Every command is a thin wrapper over the public
``AgentSession`` and ``SessionManager`` APIs (their ``*_sync`` twins, which run on agcore_lab's
background loop — the kernel's own loop is already running in a notebook).

Sessions: ``--session NAME`` names a variable in the notebook holding an ``AgentSession``; if
there is no such variable, a session the magics keep under that name (``%%agcore chat`` creates
it on first use, with the offline ``ScriptedModel`` and an in-memory store). Without
``--session``, the session used last (``default`` at first).

Managers: ``sessions``, ``tree``, ``timeline``, ``checkpoint``, ``rollback`` and ``fork CKPT``
work on a :class:`~agcore_lab.SessionManager`: ``--manager VAR`` names the variable holding it;
without it, the only ``SessionManager`` in the notebook. Their ``--session ID`` is a session id
(or a variable holding one, or an ``AgentSession``); without it, the manager session used last
by these commands, or the manager's only live session. ``fork`` takes a checkpoint when its
argument is a checkpoint id (``ckpt_...``) and a slot name otherwise.

Approvals: ``approvals`` lists the tool calls waiting for a person's decision; ``approve ID``
and ``reject ID`` decide one by its interrupt id (see :mod:`._approval_magics`).

Errors never print a traceback: usage mistakes and engine errors are one line,
``agcore: <message>``, on stderr.

Example (in a notebook)::

    %load_ext agcore_lab
    %%agcore chat --session s
    What is a context slot?

    %agcore fork alt
    %agcore diff main alt

    %agcore checkpoint --session {sid} --label "before the experiment"
    %agcore timeline
"""

from __future__ import annotations

import html
import re
import sys
from collections.abc import Callable
from typing import Any, TypeVar, cast

from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.core.magic_arguments import argument
from IPython.display import display

from agcore_lab.agent.agent import Agent
from agcore_lab.agent.session import AgentSession
from agcore_lab.agent.slots import MergeStrategy
from agcore_lab.errors import AgcoreError
from agcore_lab.jupyter._approval_magics import ApprovalCommands
from agcore_lab.jupyter._call_magics import CALLS_HELP, call_commands
from agcore_lab.jupyter._magic_args import CommandError as _CommandError
from agcore_lab.jupyter._magic_args import command as _command
from agcore_lab.jupyter._magic_args import parse as _parse
from agcore_lab.jupyter._manager_magics import names_checkpoint
from agcore_lab.jupyter._serve_magics import SERVE_HELP
from agcore_lab.llm.scripted import ScriptedModel

__all__ = ["AgcoreMagics", "load_ipython_extension"]

DEFAULT_SESSION = "default"
_NAME = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")

HELP = """\
%agcore commands: slots (each takes --session NAME)
  %%agcore chat       send the cell as a user turn and show the reply
  %agcore slots       list the slots (id, messages, mode, parent; * marks the current one)
  %agcore fork NAME   fork the current slot into NAME and switch to it
                      [--no-switch] [--from SLOT]
  %agcore switch NAME make NAME the current slot
  %agcore merge NAME  merge slot NAME into its parent
                      [--into SLOT] [--strategy append|replace|summarize]
  %agcore diff A B    show slots A and B side by side, with a merge button
--session NAME: a variable holding an AgentSession, or a session kept by these magics under
that name (the first %%agcore chat makes it). Without it: the session used last.

session tree and time travel (each takes --manager VAR; all but sessions/tree --session ID)
  %agcore sessions    the stored sessions, as a DataFrame (df = %agcore sessions)
  %agcore tree        browse the session tree: details, memory, new child, switch agent, destroy
  %agcore timeline [SESSION]
                      the session's checkpoints: plot, preview, rollback and fork buttons
  %agcore checkpoint  take a checkpoint of the session now [--label L]
  %agcore rollback CKPT
                      return the checkpoint's session to that checkpoint
  %agcore fork CKPT   start a child session from checkpoint CKPT (an id 'ckpt_...')
                      and use it from now on [--no-switch]
--manager VAR: a variable holding a SessionManager (default: the only one in the notebook).
--store URL: a manager on that store instead (postgresql://..., sqlite:///PATH); without
--manager and --store, and no SessionManager in the notebook: $AGCORE_STORE_URL, if set.
--session ID: a session id, or a variable holding one (default: the manager session used
last here, or the manager's only live session).

human approval of tool calls (each takes --manager VAR; ID is an interrupt id, int_...)
  %agcore approvals   the calls waiting for approval, as a DataFrame (df = %agcore approvals)
                      [--all: also decided and expired calls] [--panel: an ApprovalPanel]
  %agcore approve ID  run the tool and continue the turn; prints the result and the reply
                      [--args JSON: edited arguments, a JSON object or a dict variable]
                      [--rerun: a call that already ran before a rollback]
  %agcore reject ID   do not run the tool; the model sees the reason [--reason TEXT]

  %agcore help        this list"""
HELP += "\n\n" + CALLS_HELP.rstrip()  # the model-call commands (see ._call_magics)
HELP += "\n\n" + SERVE_HELP.rstrip()  # the HTTP service (see ._serve_magics)


_F = TypeVar("_F", bound=Callable[..., Any])
_M = TypeVar("_M", bound=type)
# IPython's decorators are untyped; these aliases keep mypy's strict checks on our functions.
_line_cell_magic = cast(Callable[[_F], _F], line_cell_magic)
_magics_class = cast(Callable[[_M], _M], magics_class)


_SESSION = argument("--session", "-s", default=None, help="session variable or name")
_CHAT = _command("chat", "Send the cell as a user turn.", _SESSION)
_SLOTS = _command("slots", "List the session's slots.", _SESSION)
_FORK = _command(
    "fork",
    "Fork a slot (the current one by default) and switch to the new slot.",
    argument("name", help="the new slot's name"),
    argument("--from", dest="from_slot", default=None, help="fork this slot (default: current)"),
    argument("--no-switch", action="store_true", help="stay on the current slot"),
    _SESSION,
)
_SWITCH = _command("switch", "Make a slot current.", argument("name", help="the slot"), _SESSION)
_MERGE = _command(
    "merge",
    "Merge a slot into another (its parent by default).",
    argument("name", help="the slot to merge from"),
    argument("--into", default=None, help="the target slot (default: NAME's parent)"),
    argument(
        "--strategy",
        default="append",
        type=str.lower,
        choices=[s.value for s in MergeStrategy],
        help="append, replace or summarize",
    ),
    _SESSION,
)
_DIFF = _command(
    "diff",
    "Show two slots side by side.",
    argument("left", help="the left slot (merge target)"),
    argument("right", help="the right slot (merged from)"),
    _SESSION,
)


def _slots_table(session: AgentSession) -> dict[str, str]:
    rows = [
        (
            "*" if sid == session.current_slot_id else "",
            sid,
            str(len(slot.messages)),
            slot.mode.value,
            slot.parent_slot_id or "",
        )
        for sid, slot in session.slots.items()
    ]
    header = ("", "slot", "messages", "mode", "parent")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)) for r in rows]
    text = "\n".join(
        ["  ".join(c.ljust(w) for c, w in zip(header, widths, strict=True)).rstrip()]
        + [line.rstrip() for line in lines]
    )
    cells = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows
    )
    heads = "".join(f"<th>{h}</th>" for h in ("current", "slot", "messages", "mode", "parent"))
    title = f"session <code>{html.escape(session.session_id)}</code>"
    table = f'<table class="agc-table"><tr>{heads}</tr>{cells}</table>'
    return {
        "text/plain": text,
        "text/html": f'<div class="agc-view agc-slots">{title}{table}</div>',
    }


@_magics_class
class AgcoreMagics(ApprovalCommands, Magics):
    """``%agcore`` (line) and ``%%agcore`` (cell): drive agcore_lab sessions from a notebook.

    ``%agcore help`` lists the commands. Sessions created by the magics are kept in
    ``sessions`` (name → ``AgentSession``); ``last_session`` is the name used last.
    """

    def __init__(self, shell: Any = None) -> None:
        super().__init__(shell)
        self.sessions: dict[str, AgentSession] = {}
        self.last_session: str = DEFAULT_SESSION
        self.last_manager_session: str | None = None

    @_line_cell_magic
    def agcore(self, line: str, cell: str | None = None) -> Any:
        """Run one ``%agcore`` command; see ``%agcore help``.

        Returns ``None``, except ``%agcore sessions`` and ``%agcore approvals``, which return a
        DataFrame.
        """
        command, rest = ([*line.split(None, 1), "", ""])[:2]
        handlers: dict[str, Callable[[str, str | None], Any]] = {
            "chat": self._chat,
            "slots": self._slots,
            "fork": self._fork,
            "switch": self._switch,
            "merge": self._merge,
            "diff": self._diff,
            "sessions": self._sessions,
            "tree": self._tree,
            "timeline": self._timeline,
            "checkpoint": self._checkpoint,
            "rollback": self._rollback,
            "approvals": self._approvals,
            "approve": self._approve,
            "reject": self._reject,
            "chunks": self._chunks,
            "graph": self._graph,
            "serve": self._serve,
            "help": self._help,
            **call_commands(self),
        }
        try:
            handler = handlers.get(command)
            if handler is None:
                what = f"unknown command {command!r}" if command else "no command given"
                raise _CommandError(f"{what}; commands: {', '.join(handlers)} (%agcore help)")
            return handler(rest, cell)
        except (_CommandError, AgcoreError) as exc:
            text = exc.message if isinstance(exc, AgcoreError) else str(exc)
            print("agcore: " + " ".join(text.split()), file=sys.stderr)
            return None

    # -- session resolution -----------------------------------------------------------------

    def resolve(self, name: str | None, *, create: bool = False) -> AgentSession:
        """The session for ``--session name`` (``None``: the one used last).

        A variable of that name in the user namespace wins; otherwise a session kept by the
        magics; ``create=True`` makes one (ScriptedModel, in-memory store) if there is none.
        """
        key = name or self.last_session
        namespace = self.shell.user_ns if self.shell is not None else {}
        if key in namespace:
            value = namespace[key]
            if not isinstance(value, AgentSession):
                raise _CommandError(
                    f"variable {key!r} holds a {type(value).__name__}, not an AgentSession"
                )
            self.last_session = key
            return value
        session = self.sessions.get(key)
        if session is None:
            if not create:
                if name is None and key == DEFAULT_SESSION:
                    raise _CommandError(
                        "no session yet: run '%%agcore chat' first, or pass --session with "
                        "a variable holding an AgentSession"
                    )
                raise _CommandError(
                    f"no session {key!r}: no variable of that name holds one and the magics "
                    f"keep none; start one with '%%agcore chat --session {key}'"
                )
            if not _NAME.match(key):
                raise _CommandError(
                    f"session name {key!r} must be 1-64 letters, digits, '_', '.', ':' or '-'"
                )
            session = AgentSession(Agent(name=key, model=ScriptedModel()))
            self.sessions[key] = session
            print(
                f"agcore: created session {key!r} (offline ScriptedModel, in-memory store); "
                "pass --session with a variable holding your own AgentSession to use it instead"
            )
        self.last_session = key
        return session

    # -- commands ---------------------------------------------------------------------------

    def _chat(self, rest: str, cell: str | None) -> None:
        args = _parse(_CHAT, rest)
        if cell is None or not cell.strip():
            raise _CommandError("chat sends the cell: write '%%agcore chat' and the message below")
        session = self.resolve(args.session, create=True)
        result = session.submit_turn_sync(cell.strip())
        display({"text/markdown": result.reply, "text/plain": result.reply}, raw=True)

    def _slots(self, rest: str, _cell: str | None) -> None:
        args = _parse(_SLOTS, rest)
        display(_slots_table(self.resolve(args.session)), raw=True)

    def _fork(self, rest: str, _cell: str | None) -> None:
        if names_checkpoint(rest):
            self._fork_checkpoint(rest)
            return
        args = _parse(_FORK, rest)
        session = self.resolve(args.session)
        source = args.from_slot or session.current_slot_id
        child = session.fork_slot_sync(args.name, from_slot=source, switch=not args.no_switch)
        print(
            f"forked {source!r} into {child.slot_id!r} ({len(child.messages)} messages); "
            f"current slot: {session.current_slot_id!r}"
        )

    def _switch(self, rest: str, _cell: str | None) -> None:
        args = _parse(_SWITCH, rest)
        session = self.resolve(args.session)
        slot = session.switch_slot_sync(args.name)
        print(f"current slot: {slot.slot_id!r} ({len(slot.messages)} messages)")

    def _merge(self, rest: str, _cell: str | None) -> None:
        args = _parse(_MERGE, rest)
        session = self.resolve(args.session)
        preview = session.merge_preview(args.name, into=args.into, strategy=args.strategy)
        target = session.merge_slot_sync(args.name, into=args.into, strategy=args.strategy)
        print(
            f"merged {args.name!r} into {target.slot_id!r} ({preview.strategy.value}): "
            f"{preview.before} -> {len(target.messages)} messages"
        )

    def _diff(self, rest: str, _cell: str | None) -> None:
        args = _parse(_DIFF, rest)
        session = self.resolve(args.session)
        from agcore_lab.jupyter.diff.viewer import SlotDiffViewer

        display(SlotDiffViewer(session, args.left, args.right))

    def _chunks(self, rest: str, _cell: str | None) -> None:
        from agcore_lab.jupyter._rag_magics import chunks_command

        display(chunks_command(self.shell, rest))

    def _graph(self, rest: str, _cell: str | None) -> None:
        from agcore_lab.jupyter._graph_magics import graph_command

        display(graph_command(self.shell, rest))

    def _serve(self, rest: str, _cell: str | None) -> None:
        from agcore_lab.jupyter._serve_magics import serve_command

        print(serve_command(self, rest))

    def _help(self, _rest: str, _cell: str | None) -> None:
        from agcore_lab.jupyter._graph_magics import GRAPH_HELP
        from agcore_lab.jupyter._rag_magics import CHUNKS_HELP

        print(HELP + "\n\n" + CHUNKS_HELP.rstrip() + "\n" + GRAPH_HELP.rstrip())


def load_ipython_extension(ipython: Any) -> None:
    """Register the ``%agcore`` magics (``%load_ext agcore_lab``)."""
    ipython.register_magics(AgcoreMagics)

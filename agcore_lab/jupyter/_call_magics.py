"""The ``%agcore`` commands for the model-call log: ``calls`` and ``prompt``.

- ``%agcore calls [SESSION] [--last N] [--inspect]`` prints a compact table of the calls
  (turn, kind, model, tokens, latency, cost, status) of a session — an id, or a variable
  holding one — or, without SESSION, of the manager session used last (all sessions when
  there is none); ``--inspect`` shows a :class:`CallInspector` instead.
- ``%agcore prompt CALL_ID`` prints the full request of one call, role by role, with the
  parts the engine injected marked, and the response.

The manager is found like for the other manager commands (``--manager VAR``, or the only one
in the notebook). Both commands call ``manager.model_calls_sync`` / ``manager.get_call_sync``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from IPython.core.magic_arguments import argument
from IPython.display import display

from agcore_lab.jupyter._magic_args import CommandError, command, parse
from agcore_lab.jupyter._manager_magics import STORE_OPTION
from agcore_lab.llm.call_record import ModelCall, describe_call
from agcore_lab.llm.usage import format_cost

if TYPE_CHECKING:
    from agcore_lab.jupyter._manager_magics import ManagerCommands

__all__ = ["CALLS_HELP", "call_commands", "calls_table"]

CALLS_HELP = """\
model calls (each takes --manager VAR)
  %agcore calls [SESSION] [--last N] [--inspect]   the session's model calls, a compact table
  %agcore prompt CALL_ID                           the full request of one call, and its answer
"""

_MANAGER = argument("--manager", "-m", default=None, help="a variable holding a SessionManager")
_CALLS = command(
    "calls",
    "The model calls of a session (or of all sessions), oldest first.",
    argument("session", nargs="?", default=None, help="a session id, or a variable holding one"),
    argument("--last", "-n", type=int, default=None, help="only the newest N calls"),
    argument("--inspect", action="store_true", help="show a CallInspector instead"),
    _MANAGER,
    STORE_OPTION,
)
_PROMPT = command(
    "prompt",
    "The full request of one model call (as the model saw it) and its response.",
    argument("call_id", metavar="CALL_ID", help="the call's id (call_...)"),
    _MANAGER,
    STORE_OPTION,
)

_HEADER = ("call", "session", "turn", "kind", "model", "tokens", "ms", "cost", "status")


def _status(call: ModelCall) -> str:
    if call.status == "error":
        return "error"
    flags = [
        flag for flag, on in (("abandoned", call.abandoned), ("replayed", call.replayed)) if on
    ]
    return ",".join(["ok", *flags])


def calls_table(calls: Sequence[ModelCall]) -> str:
    """The calls as an aligned text table (one line each)."""
    if not calls:
        return "no model calls recorded"
    rows = [
        (
            call.call_id,
            call.session_id,
            str(call.turn_index),
            call.kind,
            call.model,
            f"{call.usage.prompt_tokens}+{call.usage.completion_tokens}",
            f"{call.latency_s * 1000:.1f}",
            format_cost(call.cost),
            _status(call),
        )
        for call in calls
    ]
    widths = [max(len(r[i]) for r in [_HEADER, *rows]) for i in range(len(_HEADER))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in [_HEADER, *rows]
    )


def call_commands(magics: ManagerCommands) -> dict[str, Callable[[str, str | None], Any]]:
    """The handlers to add to ``%agcore``'s command table."""

    def calls(rest: str, _cell: str | None) -> None:
        args = parse(_CALLS, rest)
        if args.last is not None and args.last < 1:
            raise CommandError("--last must be a positive number of calls")
        manager = magics.resolve_manager(args.manager, args.store)
        session_id: str | None = None
        if args.session is not None:
            session_id = magics.resolve_session_id(manager, args.session)
        elif magics.last_manager_session is not None or len(manager.live_ids()) == 1:
            session_id = magics.resolve_session_id(manager, None)
        if args.inspect:
            if session_id is None:
                raise CommandError("--inspect needs a SESSION")
            from agcore_lab.jupyter.calls import CallInspector

            display(CallInspector(manager, session_id))
            return
        print(calls_table(manager.model_calls_sync(session_id, last=args.last)))

    def prompt(rest: str, _cell: str | None) -> None:
        args = parse(_PROMPT, rest)
        manager = magics.resolve_manager(args.manager, args.store)
        print(describe_call(manager.get_call_sync(args.call_id.strip("'\""))))

    return {"calls": calls, "prompt": prompt}

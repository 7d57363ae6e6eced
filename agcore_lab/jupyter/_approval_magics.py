"""The ``%agcore`` commands for human approval: ``approvals``, ``approve ID``, ``reject ID``.

``ID`` is a call's interrupt id (``int_...``, as listed by ``%agcore approvals``); its session
and run are read from the store, then ``manager.resume_sync(...)`` decides it. The manager is
found like the other manager commands (``--manager VAR``, or the only one in the notebook).
"""

from __future__ import annotations

from typing import Any

from IPython.core.magic_arguments import argument
from IPython.display import display

from agcore_lab.agent.approval import Approve, Reject
from agcore_lab.errors import AgcoreError, InvalidInputError
from agcore_lab.jupyter._magic_args import CommandError, command, parse
from agcore_lab.jupyter._manager_magics import STORE_OPTION, ManagerCommands, unquote
from agcore_lab.jupyter.approval.ops import (
    find_call,
    outcome_of_error,
    outcome_of_result,
    parse_arguments,
)

__all__ = ["ApprovalCommands"]

_MANAGER = argument("--manager", "-m", default=None, help="a variable holding a SessionManager")
_ID = argument("interrupt_id", metavar="ID", help="the call's interrupt id (int_...)")
_APPROVALS = command(
    "approvals",
    "The tool calls waiting for approval, as a DataFrame.",
    argument("--all", action="store_true", help="also the decided and expired calls"),
    argument("--panel", action="store_true", help="show an ApprovalPanel instead"),
    _MANAGER,
    STORE_OPTION,
)
_APPROVE = command(
    "approve",
    "Approve a pending tool call: the tool runs and the turn goes on.",
    _ID,
    argument("--args", default=None, help="edited arguments: a JSON object, or a dict variable"),
    argument("--rerun", action="store_true", help="run again a call that ran before a rollback"),
    _MANAGER,
    STORE_OPTION,
)
_REJECT = command(
    "reject",
    "Reject a pending tool call; the model sees the reason.",
    _ID,
    argument("--reason", "-r", default="", help="why (the model sees it)"),
    _MANAGER,
    STORE_OPTION,
)


class ApprovalCommands(ManagerCommands):
    """The approval commands, mixed into :class:`~agcore_lab.jupyter.magics.AgcoreMagics`."""

    def _approvals(self, rest: str, _cell: str | None) -> Any:
        args = parse(_APPROVALS, rest)
        manager = self.resolve_manager(args.manager, args.store)
        if args.panel:
            from agcore_lab.jupyter.approval.panel import ApprovalPanel

            display(ApprovalPanel(manager))
            return None
        return manager.pending_dataframe(include_resolved=args.all)

    def _edited_arguments(self, given: str | None) -> dict[str, Any] | None:
        if given is None:
            return None
        value = self._namespace().get(given)
        if isinstance(value, dict):
            return value
        try:
            return parse_arguments(unquote(given) or "")
        except InvalidInputError as exc:
            raise CommandError(f"--args: {exc.message}") from None

    def _approve(self, rest: str, _cell: str | None) -> None:
        args = parse(_APPROVE, rest)
        manager = self.resolve_manager(args.manager, args.store)
        decision = Approve(arguments=self._edited_arguments(args.args), rerun=args.rerun)
        self._resume(manager, args.interrupt_id, decision)

    def _reject(self, rest: str, _cell: str | None) -> None:
        args = parse(_REJECT, rest)
        manager = self.resolve_manager(args.manager, args.store)
        self._resume(manager, args.interrupt_id, Reject(reason=unquote(args.reason) or ""))

    def _resume(self, manager: Any, interrupt_id: str, decision: Approve | Reject) -> None:
        call = find_call(manager, interrupt_id)
        try:
            result = manager.resume_sync(call.session_id, call.run_id, interrupt_id, decision)
        except AgcoreError as exc:
            # 409 / 410 / 404 / invalid arguments: one line, with the status.
            raise CommandError(outcome_of_error(call, exc).text) from None
        self.last_manager_session = call.session_id
        print(outcome_of_result(call, decision, result).text)

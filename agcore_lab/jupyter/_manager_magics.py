"""The ``%agcore`` commands over a :class:`~agcore_lab.SessionManager`: the tree and time travel.

``sessions``, ``tree``, ``timeline [SESSION]``, ``checkpoint [--label L]``, ``rollback CKPT`` and
``fork CKPT``. Each finds its manager with ``--manager VAR`` (a variable in the notebook) or,
without it, the only ``SessionManager`` in the notebook. ``--session ID`` is a session id, a
variable holding one, or a variable holding an ``AgentSession``; without it, the manager session
these commands used last, or the manager's only live session. ``rollback`` and ``fork`` read the
session from the checkpoint itself.
"""

from __future__ import annotations

import os
from typing import Any

from IPython.core.magic_arguments import argument
from IPython.display import display

from agcore_lab.agent.session import AgentSession
from agcore_lab.engine.manager import SessionManager
from agcore_lab.errors import AgcoreError
from agcore_lab.jupyter._magic_args import CommandError, command, parse
from agcore_lab.store.open import STORE_URL_ENV

__all__ = ["STORE_OPTION", "ManagerCommands", "names_checkpoint"]

_MANAGER = argument("--manager", "-m", default=None, help="a variable holding a SessionManager")
_STORE = argument(
    "--store",
    default=None,
    metavar="URL",
    help="a store URL to open a manager on (default: $AGCORE_STORE_URL, when the notebook "
    "holds no SessionManager)",
)
_SESSION = argument("--session", "-s", default=None, help="a session id, or a variable holding one")
_SESSIONS = command("sessions", "The manager's stored sessions, as a DataFrame.", _MANAGER, _STORE)
_TREE = command("tree", "Browse the manager's session tree.", _MANAGER, _STORE)
_TIMELINE = command(
    "timeline",
    "Show a session's checkpoints.",
    argument("target", nargs="?", default=None, metavar="SESSION", help="the session id"),
    _SESSION,
    _MANAGER,
    _STORE,
)
_CHECKPOINT = command(
    "checkpoint",
    "Take a checkpoint of the session now.",
    argument("--label", "-l", default=None, help="a label for the checkpoint"),
    _SESSION,
    _MANAGER,
    _STORE,
)
_ROLLBACK = command(
    "rollback",
    "Return a session to a checkpoint.",
    argument("ckpt", help="the checkpoint id"),
    _SESSION,
    _MANAGER,
    _STORE,
)
_FORK = command(
    "fork",
    "Start a child session from a checkpoint.",
    argument("ckpt", help="the checkpoint id (ckpt_...)"),
    argument("--no-switch", action="store_true", help="keep using the current session"),
    _SESSION,
    _MANAGER,
    _STORE,
)
# Options of either ``fork`` (slot or checkpoint) that take a value.
_VALUE_OPTIONS = {"--from", "--session", "-s", "--manager", "-m", "--store"}
STORE_OPTION = _STORE
"""``--store URL``, for the other commands that take ``--manager``."""


def names_checkpoint(rest: str) -> bool:
    """Whether ``fork``'s positional argument is a checkpoint id (``ckpt_...``), not a slot."""
    skip = False
    for token in rest.split():
        if skip:
            skip = False
        elif token in _VALUE_OPTIONS:
            skip = True
        elif not token.startswith("-"):
            return token.startswith("ckpt_")
    return False


def unquote(text: str | None) -> str | None:
    """``"a b"`` → ``a b``: IPython's argument splitter keeps the quotes of a quoted value."""
    if text is not None and len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


class ManagerCommands:
    """The manager commands, mixed into :class:`~agcore_lab.jupyter.magics.AgcoreMagics`."""

    shell: Any
    last_manager_session: str | None

    # -- resolution ---------------------------------------------------------------------------

    def _namespace(self) -> dict[str, Any]:
        return self.shell.user_ns if self.shell is not None else {}

    def resolve_manager(self, name: str | None, store: str | None = None) -> SessionManager:
        """The manager named by ``--manager``; else one on the store ``--store URL`` names;
        else the only one in the notebook; else one on ``$AGCORE_STORE_URL`` when it is set.

        A manager opened on a URL is kept, one per URL, for the next commands.
        """
        namespace = self._namespace()
        if name is not None and store is not None:
            raise CommandError("give --manager VAR or --store URL, not both")
        if store is not None:
            return self.store_manager(store)
        if name is not None:
            if name not in namespace:
                raise CommandError(
                    f"no variable {name!r}: --manager names a variable holding a SessionManager"
                )
            value = namespace[name]
            if not isinstance(value, SessionManager):
                raise CommandError(
                    f"variable {name!r} holds a {type(value).__name__}, not a SessionManager"
                )
            return value
        found: dict[int, tuple[str, SessionManager]] = {}
        for key, value in namespace.items():
            if not key.startswith("_") and isinstance(value, SessionManager):
                found.setdefault(id(value), (key, value))
        if len(found) == 1:
            return next(iter(found.values()))[1]
        if not found and os.environ.get(STORE_URL_ENV):
            return self.store_manager(os.environ[STORE_URL_ENV])
        if not found:
            raise CommandError(
                "no SessionManager in the notebook: create one, e.g. "
                "manager = SessionManager(SqliteStore('lab.db')), or pass --manager VAR "
                f"or --store URL (or set {STORE_URL_ENV})"
            )
        names = ", ".join(sorted(key for key, _ in found.values()))
        raise CommandError(
            f"{len(found)} SessionManagers in the notebook ({names}): pass --manager VAR"
        )

    def store_manager(self, url: str) -> SessionManager:
        """A manager on the store at ``url`` (opened once, then kept for this URL)."""
        managers: dict[str, SessionManager] = self.__dict__.setdefault("_store_managers", {})
        if url not in managers:
            from agcore_lab.store.open import open_store

            try:
                managers[url] = SessionManager(open_store(url))
            except AgcoreError as exc:
                raise CommandError(f"cannot open the store {url!r}: {exc}") from None
        return managers[url]

    def resolve_session_id(self, manager: SessionManager, given: str | None) -> str:
        """The session for ``--session`` (an id, or a variable holding an id or a session)."""
        if given is not None:
            value = self._namespace().get(given, given)
            if isinstance(value, AgentSession):
                value = value.session_id
            if not isinstance(value, str):
                raise CommandError(
                    f"variable {given!r} holds a {type(value).__name__}, not a session id"
                )
            self.last_manager_session = value
            return value
        if self.last_manager_session is not None:
            return self.last_manager_session
        live = manager.live_ids()
        if len(live) == 1:
            self.last_manager_session = live[0]
            return live[0]
        what = "no live session" if not live else f"{len(live)} live sessions"
        raise CommandError(f"{what} to pick from: pass --session ID (see %agcore sessions)")

    # -- commands -----------------------------------------------------------------------------

    def _sessions(self, rest: str, _cell: str | None) -> Any:
        args = parse(_SESSIONS, rest)
        return self.resolve_manager(args.manager, args.store).sessions_dataframe()

    def _tree(self, rest: str, _cell: str | None) -> None:
        args = parse(_TREE, rest)
        manager = self.resolve_manager(args.manager, args.store)
        from agcore_lab.jupyter.tree.browser import SessionTreeBrowser

        display(SessionTreeBrowser(manager))

    def _timeline(self, rest: str, _cell: str | None) -> None:
        args = parse(_TIMELINE, rest)
        if args.target is not None and args.session is not None:
            raise CommandError("give the session once: SESSION or --session ID")
        manager = self.resolve_manager(args.manager, args.store)
        sid = self.resolve_session_id(manager, args.target or args.session)
        from agcore_lab.jupyter.history import CheckpointTimeline

        display(CheckpointTimeline(manager, sid))

    def _checkpoint(self, rest: str, _cell: str | None) -> None:
        args = parse(_CHECKPOINT, rest)
        manager = self.resolve_manager(args.manager, args.store)
        sid = self.resolve_session_id(manager, args.session)
        text = unquote(args.label)
        ckpt = manager.checkpoint_sync(sid, text)
        meta = manager.checkpointer.get_checkpoint_sync(ckpt)
        label = f", label {text!r}" if text else ""
        print(f"checkpoint {ckpt} of {sid} at turn {meta.turn_index}{label}")

    def _checkpoint_session(self, manager: SessionManager, ckpt: str, given: str | None) -> Any:
        meta = manager.checkpointer.get_checkpoint_sync(ckpt)
        sid = self.resolve_session_id(manager, given) if given is not None else meta.session_id
        return meta, sid

    def _rollback(self, rest: str, _cell: str | None) -> None:
        args = parse(_ROLLBACK, rest)
        manager = self.resolve_manager(args.manager, args.store)
        meta, sid = self._checkpoint_session(manager, args.ckpt, args.session)
        recorded = manager.checkpointer.rollback_sync(sid, args.ckpt)
        self.last_manager_session = sid
        print(f"rolled {sid} back to turn {meta.turn_index} ({args.ckpt}); recorded as {recorded}")

    def _fork_checkpoint(self, rest: str) -> None:
        args = parse(_FORK, rest)
        manager = self.resolve_manager(args.manager, args.store)
        meta, sid = self._checkpoint_session(manager, args.ckpt, args.session)
        child = manager.checkpointer.fork_sync(sid, args.ckpt)
        if not args.no_switch or self.last_manager_session is None:
            self.last_manager_session = sid if args.no_switch else child
        print(
            f"forked {sid} at turn {meta.turn_index} ({args.ckpt}) into session {child}; "
            f"current session: {self.last_manager_session}"
        )

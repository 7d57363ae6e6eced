"""``%agcore serve``: run the HTTP service in the background for the notebook's manager.

``%agcore serve [--port N] [--host H] [--manager VAR] [--token T | --no-auth]`` starts
:func:`agcore_lab.serve.create_app` for the manager on a background thread and prints the
approval page's address, so a colleague can decide pending calls from a browser while the
notebook goes on. The engine runs on agcore_lab's background loop (``engine_loop="bridge"``),
the loop the notebook's ``*_sync`` calls use, so the manager stays usable from cells.

Without ``--token`` the token is ``AGCORE_TOKEN`` or a fresh random one; it is put in the
notebook variable ``agcore_serve_token`` and never printed (cell outputs get saved and
shared). ``%agcore serve --stop`` stops the service (``--port N``: only that one).
"""

from __future__ import annotations

import os
import secrets
from typing import Any

from IPython.core.magic_arguments import argument

from agcore_lab.jupyter._magic_args import CommandError, command, parse
from agcore_lab.jupyter._manager_magics import STORE_OPTION

__all__ = ["SERVE_HELP", "TOKEN_VARIABLE", "running_servers", "serve_command"]

TOKEN_VARIABLE = "agcore_serve_token"
SERVE_HELP = """\
the engine over HTTP (needs the 'serve' extra: fastapi, uvicorn)
  %agcore serve       serve the notebook's manager in the background and print the approval
                      page's address [--port N (default 8765)] [--host H] [--manager VAR]
                      [--token T (default: $AGCORE_TOKEN or a random one, in the variable
                      agcore_serve_token)] [--no-auth (loopback hosts only)]
  %agcore serve --stop
                      stop it [--port N: only that one]"""

_SERVE = command(
    "serve",
    "Serve the notebook's manager over HTTP in the background.",
    argument("--port", type=int, default=None, help="port (default 8765)"),
    argument("--host", default="127.0.0.1", help="interface (default 127.0.0.1)"),
    argument("--manager", "-m", default=None, help="a variable holding a SessionManager"),
    STORE_OPTION,
    argument("--token", default=None, help="bearer token (default: AGCORE_TOKEN or random)"),
    argument("--no-auth", action="store_true", help="no token (loopback host only)"),
    argument("--stop", action="store_true", help="stop the service"),
)

_running: dict[int, Any] = {}


def running_servers() -> dict[int, Any]:
    """The services started by ``%agcore serve``, by port (``BackgroundServer`` objects)."""
    return {port: s for port, s in _running.items() if s.running}


def _stop(port: int | None) -> str:
    ports = [port] if port is not None else sorted(_running)
    stopped = []
    for each in ports:
        server = _running.pop(each, None)
        if server is not None:
            server.stop()
            stopped.append(server.url)
    if not stopped:
        which = f" on port {port}" if port is not None else ""
        raise CommandError(f"no service started by %agcore serve is running{which}")
    return "stopped " + ", ".join(stopped)


def serve_command(magics: Any, rest: str) -> str:
    """Run ``%agcore serve ...``; return the line to print."""
    args = parse(_SERVE, rest)
    if args.stop:
        return _stop(args.port)
    try:
        from agcore_lab.serve import BackgroundServer, create_app
        from agcore_lab.serve.auth import is_loopback
    except ImportError:
        raise CommandError(
            "serve needs FastAPI and uvicorn: pip install 'agcore_lab[serve]'"
        ) from None
    port = 8765 if args.port is None else args.port
    if port in running_servers():
        raise CommandError(f"already serving on port {port}; '%agcore serve --stop' first")
    manager = magics.resolve_manager(args.manager, args.store)
    token: str | None = None
    if args.no_auth:
        if args.token is not None:
            raise CommandError("give --token or --no-auth, not both")
        if not is_loopback(args.host):
            raise CommandError(f"--no-auth is only allowed on a loopback host, not {args.host!r}")
    else:
        token = args.token or os.environ.get("AGCORE_TOKEN") or secrets.token_urlsafe(18)
    app = create_app(manager, token=token, no_auth=args.no_auth, engine_loop="bridge")
    server = BackgroundServer(app, host=args.host, port=port).start()
    _running[server.port] = server
    where = "no token (loopback only)"
    if token is not None:
        magics.shell.user_ns[TOKEN_VARIABLE] = token
        where = f"token in the variable {TOKEN_VARIABLE}"
    return (
        f"serving {manager!r} at {server.url} ({where}); approval page: {server.url}/approve; "
        "stop with %agcore serve --stop"
    )

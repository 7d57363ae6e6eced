"""The ``agcore-lab serve`` subcommand: its arguments and what it runs.

``cli.py`` only registers it (``add_serve_command``); the command's code lives here, so the
command line stays small and FastAPI/uvicorn load only when ``serve`` runs.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Any

from agcore_lab.agent.agent import Agent
from agcore_lab.errors import AgcoreError, ConfigurationError

__all__ = ["TOKEN_ENV", "add_serve_command", "load_agents", "run_serve"]

TOKEN_ENV = "AGCORE_TOKEN"


def add_serve_command(commands: Any) -> None:
    """Add ``serve`` to the ``agcore-lab`` subparsers."""
    serve = commands.add_parser(
        "serve",
        help="serve sessions, turns, checkpoints and approvals over HTTP",
        description="Serve the engine over HTTP (needs the 'serve' extra: fastapi, uvicorn).",
    )
    serve.add_argument(
        "--store",
        default=None,
        help="sqlite:///PATH, a path or :memory: (default: $AGCORE_STORE_URL, else agcore.db)",
    )
    serve.add_argument(
        "--agents",
        action="append",
        default=[],
        metavar="MODULE:ATTR",
        help="an importable list or dict of Agents (repeatable)",
    )
    serve.add_argument("--host", default="127.0.0.1", help="interface (default: %(default)s)")
    serve.add_argument("--port", type=int, default=8765, help="port (default: %(default)s)")
    serve.add_argument(
        "--token", default=None, help=f"bearer token (default: ${TOKEN_ENV}; prefer the variable)"
    )
    serve.add_argument(
        "--no-auth", action="store_true", help="no token (only with a loopback --host)"
    )
    serve.add_argument(
        "--max-body", type=int, default=None, metavar="BYTES", help="largest request body"
    )
    serve.add_argument("--log-level", default="info", help="uvicorn's log level")


def load_agents(spec: str) -> list[Agent]:
    """Import ``MODULE:ATTR`` and return its agents (a list, tuple or dict of ``Agent``s, or
    one ``Agent``).

    Raises:
        ConfigurationError: Not ``MODULE:ATTR``, not importable, or not agents.
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigurationError(f"--agents takes MODULE:ATTR, not {spec!r}")
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # like `python -m`: modules beside the command work
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigurationError(f"cannot import {module_name!r}: {exc}") from exc
    try:
        value = getattr(module, attr)
    except AttributeError:
        raise ConfigurationError(f"module {module_name!r} has no attribute {attr!r}") from None
    items = list(value.values()) if isinstance(value, dict) else value
    if isinstance(items, Agent):
        items = [items]
    if not isinstance(items, list | tuple) or not all(isinstance(a, Agent) for a in items):
        raise ConfigurationError(f"{spec} must be a list or dict of Agent objects")
    return list(items)


def _settings(args: argparse.Namespace) -> tuple[str | None, bool]:
    from agcore_lab.serve.auth import is_loopback

    token = args.token or os.environ.get(TOKEN_ENV) or None
    if args.no_auth:
        if token is not None:
            raise ConfigurationError("give --token (or AGCORE_TOKEN) or --no-auth, not both")
        if not is_loopback(args.host):
            raise ConfigurationError(
                f"--no-auth is only allowed on a loopback host (127.0.0.1, ::1), not "
                f"{args.host!r}; give a --token to listen there"
            )
        return None, True
    if token is None:
        raise ConfigurationError(
            f"a token is required: --token TOKEN or {TOKEN_ENV}=TOKEN "
            "(or --no-auth on a loopback host)"
        )
    return token, False


def run_serve(args: argparse.Namespace) -> int:
    """Run the service until interrupted; return the exit status."""
    try:
        return _run(args)
    except AgcoreError as exc:
        print(f"agcore-lab serve: {exc.message}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    try:
        import uvicorn
    except ImportError:
        raise ConfigurationError(
            "agcore-lab serve needs FastAPI and uvicorn: pip install 'agcore_lab[serve]'"
        ) from None
    from agcore_lab.engine.manager import SessionManager
    from agcore_lab.serve.app import create_app
    from agcore_lab.serve.limits import Limits
    from agcore_lab.store.open import open_store

    token, no_auth = _settings(args)
    agents = [agent for spec in args.agents for agent in load_agents(spec)]
    limits = Limits() if args.max_body is None else Limits(max_body_bytes=args.max_body)
    store = open_store(args.store)
    manager = SessionManager(store, agents=agents)
    # The server owns this manager and nothing else drives it: run the engine on uvicorn's
    # loop (no thread hop per call; see agcore_lab.serve.engine and bench/serve.py).
    app = create_app(manager, token=token, no_auth=no_auth, limits=limits, engine_loop="app")
    names = ", ".join(sorted(manager.agents)) or "none"
    print(
        f"agcore-lab serve: http://{args.host}:{args.port} (store {store!r}, agents: {names}); "
        f"approval page at /approve",
        file=sys.stderr,
        flush=True,
    )
    try:
        uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level)
    finally:
        store.close()
    return 0

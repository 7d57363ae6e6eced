"""The ``agcore-lab`` command (also ``python -m agcore_lab``).

Subcommands: ``demo`` (the offline demo), ``info DB`` (what a store file holds; ``--store
URL`` for any store), ``migrate SRC DST`` (copy a lab between stores) and ``serve``. Any
:class:`~agcore_lab.errors.AgcoreError` prints one line, ``agcore-lab: error: ...``, and exits
with status 1 — no traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from agcore_lab.errors import AgcoreError

__all__ = ["main"]

_DEMO_HELP = """\
Run the offline demo: a calculator agent with tool calls, a fork into a second context
slot and a merge, an automatic summary and session memory; a session tree with checkpoints,
a fork from a checkpoint and a rollback; a tool call approved by a person (from code);
five sub-agents dispatched in parallel; retrieval over a few notes; a knowledge graph with
hybrid retrieval; then a report. Everything runs on ScriptedModel (no network, no API key)
and is stored in one SQLite file. Running it again appends to that file (it says so);
--fresh starts from an empty one.
"""


def _version() -> str:
    from agcore_lab import __version__

    return __version__


def _existing_dir(path: str) -> str:
    parent = Path(path).expanduser().resolve().parent
    if not parent.is_dir():
        raise argparse.ArgumentTypeError(
            f"directory {str(parent)!r} does not exist; create it first or choose another path"
        )
    return path


def _run_demo(args: argparse.Namespace) -> int:
    from agcore_lab.demo import run_demo

    run_demo(args.db, fresh=args.fresh, store_url=args.store)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    parser = argparse.ArgumentParser(
        prog="agcore-lab",
        description="agcore_lab: a Jupyter-first research toolkit for LLM agents.",
    )
    parser.add_argument("--version", action="version", version=f"agcore-lab {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = commands.add_parser(
        "demo",
        help="run the offline demo (ScriptedModel + SQLite)",
        description=_DEMO_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    demo.add_argument(
        "--db",
        default="agcore_demo.db",
        type=_existing_dir,
        help="SQLite file to use (default: %(default)s; its directory must exist)",
    )
    demo.add_argument(
        "--fresh", action="store_true", help="delete the file first instead of appending to it"
    )
    demo.add_argument(
        "--store",
        default=None,
        metavar="URL",
        help="run on this store instead of --db (postgresql://..., sqlite:///PATH); never "
        "$AGCORE_STORE_URL, so the demo stays out of a shared lab unless asked",
    )
    info = commands.add_parser(
        "info",
        help="show what a store file holds",
        description="Sessions, checkpoints, pending calls, vectors, graphs, schema version "
        "and size of a store (a SQLite file DB, or --store URL for any store); reads it "
        "without changing it.",
    )
    info.add_argument("db", metavar="DB", nargs="?", default=None, help="the SQLite file")
    from agcore_lab.cli_store import add_migrate_command, add_store_option, run_info, run_migrate

    add_store_option(info)
    add_migrate_command(commands)
    from agcore_lab.serve.command import add_serve_command, run_serve

    add_serve_command(commands)
    args = parser.parse_args(argv)
    handlers = {"demo": _run_demo, "info": run_info, "serve": run_serve, "migrate": run_migrate}
    handler = handlers.get(args.command)
    if handler is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return handler(args)
    except AgcoreError as exc:
        print(f"agcore-lab: error: {exc}", file=sys.stderr)
        return 1

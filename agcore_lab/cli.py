"""The ``agcore-lab`` command (also ``python -m agcore_lab``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    parser = argparse.ArgumentParser(
        prog="agcore-lab",
        description="agcore_lab: a Jupyter-first research toolkit for LLM agents.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = commands.add_parser("demo", help="run the offline demo (ScriptedModel + SQLite)")
    demo.add_argument(
        "--db", default="agcore_demo.db", help="SQLite file to use (default: %(default)s)"
    )
    from agcore_lab.serve.command import add_serve_command, run_serve

    add_serve_command(commands)
    args = parser.parse_args(argv)
    if args.command == "demo":
        from agcore_lab.demo import run_demo

        run_demo(args.db)
        return 0
    if args.command == "serve":
        return run_serve(args)
    parser.print_help(sys.stderr)
    return 2

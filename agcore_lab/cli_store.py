"""The ``agcore-lab`` commands that take a store URL: ``migrate SRC DST`` and ``info``.

``cli.py`` registers them; their code lives here. ``--store URL`` names a store the way
:func:`~agcore_lab.store.open.open_store` reads it (``postgresql://...``, ``sqlite:///PATH``,
a path) and defaults to ``$AGCORE_STORE_URL``.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any
from urllib.parse import unquote, urlsplit

from agcore_lab.errors import ConfigurationError
from agcore_lab.store.open import STORE_URL_ENV, split_postgres_url

__all__ = ["add_migrate_command", "add_store_option", "run_info", "run_migrate", "store_url"]

_MIGRATE_HELP = """\
Copy a whole lab from one store to another: sessions, message chains, slots, checkpoints,
memory, pending tool calls, model calls, vector stores and knowledge graphs (not the change
feed). SRC and DST are store URLs or paths, e.g. sqlite:///lab.db and
postgresql://user@host:5432/agcore (?schema=NAME picks the schema), either way round. The
copy is one transaction on DST, every count is checked there before it commits and printed.
A DST that holds anything is refused unless --force, which replaces what it holds.
"""


def add_store_option(parser: argparse.ArgumentParser) -> None:
    """``--store URL``, defaulting to ``$AGCORE_STORE_URL``."""
    parser.add_argument(
        "--store",
        default=None,
        metavar="URL",
        help=f"postgresql://..., sqlite:///PATH or a path (default: ${STORE_URL_ENV})",
    )


def store_url(given: str | None) -> str | None:
    """``given``, else ``$AGCORE_STORE_URL`` (``None`` when neither is set)."""
    return given or os.environ.get(STORE_URL_ENV) or None


def add_migrate_command(commands: Any) -> None:
    """Add ``migrate`` to the ``agcore-lab`` subparsers."""
    migrate = commands.add_parser(
        "migrate",
        help="copy a whole lab from one store to another (SQLite <-> PostgreSQL)",
        description=_MIGRATE_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    migrate.add_argument("source", metavar="SRC", help="the store to copy")
    migrate.add_argument("destination", metavar="DST", help="the store to fill")
    migrate.add_argument(
        "--force", action="store_true", help="replace what DST holds instead of refusing"
    )
    migrate.add_argument(
        "--batch", type=int, default=5000, help="rows per write (default: %(default)s)"
    )


def run_migrate(args: argparse.Namespace) -> int:
    """Run ``migrate``: progress on stderr, the verified counts on stdout."""
    from agcore_lab.store.transfer import migrate_store

    def progress(what: str, done: int, total: int) -> None:
        print(f"agcore-lab: copying {what}: {done}/{total}", file=sys.stderr, flush=True)

    report = migrate_store(
        args.source, args.destination, force=args.force, batch=args.batch, progress=progress
    )
    for line in report.lines():
        print(line)
    return 0


def run_info(args: argparse.Namespace) -> int:
    """Run ``info [DB] [--store URL]``."""
    from agcore_lab.store.info import store_info

    if args.db is not None and args.store is not None:
        raise ConfigurationError("give the store once: DB or --store URL")
    target = args.db if args.db is not None else store_url(args.store)
    if target is None:
        raise ConfigurationError(f"give DB or --store URL (or set {STORE_URL_ENV})")
    scheme = urlsplit(target).scheme.lower() if "://" in target else ""
    if (server := split_postgres_url(target)) is not None:
        from agcore_lab.store.pg_info import postgres_info

        info = postgres_info(*server)
    elif scheme == "sqlite":
        rest = target.split("://", 1)[1]
        if not rest.startswith("/") or len(rest) < 2:
            raise ConfigurationError(f"{target!r} names no file; try sqlite:///lab.db")
        info = store_info(unquote(rest[1:]))
    elif scheme:
        raise ConfigurationError(f"no store backend for {scheme + '://'!r} URLs", scheme=scheme)
    else:
        info = store_info(target)
    for line in info.lines():
        print(line)
    return 0

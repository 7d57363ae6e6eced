"""``open_store(url)``: one place that turns a store URL into a :class:`Store`.

The command line, the magics and ``agcore-lab serve`` all take a store as a URL (or read
``AGCORE_STORE_URL``): ``postgresql://...`` opens a :class:`~agcore_lab.store.postgres.
PostgresStore` (one session tree for a whole lab), anything else SQLite.
"""

from __future__ import annotations

import os
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from agcore_lab.errors import ConfigurationError
from agcore_lab.store.base import Store

__all__ = ["STORE_URL_ENV", "open_store", "split_postgres_url"]

STORE_URL_ENV = "AGCORE_STORE_URL"
"""The environment variable read when no URL is given."""

_DEFAULT = "agcore.db"


def open_store(
    url: str | os.PathLike[str] | None = None, *, timeout: float = 10.0, schema: str = "agcore"
) -> Store:
    """Open the store a URL names.

    Accepted forms:

    - ``postgresql://user:password@host:5432/dbname`` (or ``postgres://``) — a PostgreSQL
      server, the store's tables in ``schema`` (or the URL's ``?schema=NAME``; needs the
      ``postgres`` extra);
    - ``sqlite:///relative/or/absolute.db`` — ``sqlite:///lab.db`` is ``lab.db`` in the
      current directory, ``sqlite:////tmp/lab.db`` is ``/tmp/lab.db``;
    - ``sqlite:///:memory:``, ``sqlite://`` or ``:memory:`` — a private in-memory database;
    - a plain path (``lab.db``, ``/data/lab.db``, a ``pathlib.Path``).

    Args:
        url: The store URL; ``None`` reads ``AGCORE_STORE_URL`` and falls back to
            ``agcore.db`` in the current directory.
        timeout: Seconds a write waits for another writer (SQLite's busy timeout), or for a
            connection (PostgreSQL).
        schema: The PostgreSQL schema of the store's tables.

    Returns:
        An open store (the caller closes it).

    Raises:
        ConfigurationError: A scheme no backend serves, or an empty URL.
        StorageError: The database could not be opened.

    Example:
        >>> store = open_store(":memory:")
        >>> type(store).__name__
        'SqliteStore'
        >>> store.close()
    """
    from agcore_lab.store.sqlite import SqliteStore

    given = (os.environ.get(STORE_URL_ENV) or _DEFAULT) if url is None else os.fspath(url)
    if not given.strip():
        raise ConfigurationError("the store URL is empty; give sqlite:///PATH, a path or :memory:")
    if given == ":memory:":
        return SqliteStore(":memory:", timeout=timeout)
    scheme = urlsplit(given).scheme if "://" in given else ""
    if not scheme:
        return SqliteStore(given, timeout=timeout)
    if scheme.lower() in ("postgresql", "postgres"):
        from agcore_lab.store.postgres import PostgresStore

        parts = urlsplit(given)
        query = [(k, v) for k, v in parse_qsl(parts.query) if k != "schema"]
        schema = dict(parse_qsl(parts.query)).get("schema", schema)
        server = urlunsplit(parts._replace(query=urlencode(query)))
        return PostgresStore(server, schema=schema, timeout=timeout)
    if scheme.lower() != "sqlite":
        raise ConfigurationError(
            f"no store backend for {scheme + '://'!r} URLs; use postgresql://..., "
            "sqlite:///PATH, a plain path or :memory:",
            scheme=scheme,
        )
    rest = given.split("://", 1)[1]
    if rest in ("", "/:memory:"):
        return SqliteStore(":memory:", timeout=timeout)
    if not rest.startswith("/"):
        raise ConfigurationError(
            f"a sqlite URL has three slashes before a relative path: sqlite:///{rest}",
            scheme=scheme,
        )
    path = unquote(rest[1:].split("?", 1)[0])
    if not path:
        raise ConfigurationError("the sqlite URL names no file; try sqlite:///lab.db")
    return SqliteStore(path, timeout=timeout)


def split_postgres_url(url: str, schema: str = "agcore") -> tuple[str, str] | None:
    """``(server URL, schema)`` of a ``postgresql://`` store URL — its ``?schema=NAME``, else
    ``schema`` — or ``None`` for any other URL.

    Example:
        >>> split_postgres_url("postgresql://db/lab?schema=team&sslmode=require")
        ('postgresql://db/lab?sslmode=require', 'team')
        >>> split_postgres_url("sqlite:///lab.db") is None
        True
    """
    parts = urlsplit(url) if "://" in url else None
    if parts is None or parts.scheme.lower() not in ("postgresql", "postgres"):
        return None
    query = [(k, v) for k, v in parse_qsl(parts.query) if k != "schema"]
    schema = dict(parse_qsl(parts.query)).get("schema", schema)
    return urlunsplit(parts._replace(query=urlencode(query))), schema

"""What a SQLite failure means, in words a user can act on, and checks of a store's settings.

Used by :class:`~agcore_lab.store.sqlite.SqliteStore`: every driver error becomes a
:class:`~agcore_lab.errors.StorageError` that names the path and the cause (disk full,
read-only file, not a database, locked), and text SQLite cannot store (lone surrogates) is
an :class:`~agcore_lab.errors.InvalidInputError`. Rows that cannot be decoded (corrupted JSON
or dates) are a ``StorageError`` naming the table and key.
"""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path

from agcore_lab.errors import AgcoreError, CorruptRecordError, InvalidInputError, StorageError

__all__ = [
    "STORE_VALUE_ERRORS",
    "check_path",
    "check_timeout",
    "decoding",
    "driver_error",
    "surrogate_error",
    "value_error",
]

STORE_VALUE_ERRORS = (UnicodeEncodeError, OverflowError)
"""Raised by sqlite3 while binding a value it cannot store (see :func:`value_error`)."""

_CAUSES = (
    (
        ("database or disk is full", "SQLITE_FULL"),
        "the disk is full (or the database reached its size limit); free some space, then "
        "try again — nothing of this write was stored",
    ),
    (
        ("readonly database", "SQLITE_READONLY"),
        "the database file is read-only; open a writable copy to change it (reading works)",
    ),
    (
        ("file is not a database", "SQLITE_NOTADB"),
        "the file is not an agcore_lab (SQLite) database; check the path",
    ),
    (
        ("database is locked", "SQLITE_BUSY"),
        "another process holds the write lock; try again, or raise SqliteStore(timeout=...)",
    ),
    (
        ("unable to open database file", "SQLITE_CANTOPEN"),
        "the file cannot be opened; check that its directory exists and is accessible",
    ),
)


def driver_error(doing: str, exc: sqlite3.Error, path: str) -> StorageError | InvalidInputError:
    """A ``StorageError`` for ``exc`` that says what it means (keep ``exc`` as the cause); a
    value SQLite cannot bind (a list as an id) is the caller's ``InvalidInputError``."""
    if isinstance(exc, sqlite3.ProgrammingError) and "binding parameter" in str(exc):
        return InvalidInputError(f"a value cannot be stored or looked up: {exc}")
    text = f"{exc} {getattr(exc, 'sqlite_errorname', '')}"
    for needles, meaning in _CAUSES:
        if any(needle in text for needle in needles):
            return StorageError(f"{doing}: {meaning} ({exc})", path=path)
    return StorageError(f"{doing}: {exc}", path=path)


def value_error(exc: Exception) -> InvalidInputError:
    """What SQLite cannot take as a value: lone surrogates, integers beyond 64 bits."""
    if isinstance(exc, UnicodeError):
        return surrogate_error(exc)
    return InvalidInputError(
        f"a number is too large for the store (SQLite integers are 64-bit): {exc}; store it "
        "as a string"
    )


def surrogate_error(exc: UnicodeError) -> InvalidInputError:
    """Text with a lone surrogate (``"\\ud800"``) cannot be stored as UTF-8: refuse it."""
    value = exc.object if isinstance(exc, UnicodeEncodeError) else ""
    start = getattr(exc, "start", 0)
    excerpt = value[max(0, start - 20) : start + 20] if isinstance(value, str) else ""
    return InvalidInputError(
        "a text value contains a lone surrogate code point (U+D800-U+DFFF), which is not "
        f"valid Unicode text and cannot be stored: near {excerpt!r}; remove it, or decode "
        "the source with errors='replace'"
    )


class decoding:  # (lower case: used as ``with decoding(table, key):``, as a function was)
    """Turn a JSON / date / validation failure while decoding a row into a
    :class:`~agcore_lab.errors.CorruptRecordError` (a ``StorageError``, and 422 for a service)
    naming the table and the row.

    A plain context manager, not a generator one: every locked read of the store enters it.
    """

    __slots__ = ("key", "table")

    def __init__(self, table: str, key: object) -> None:
        self.table, self.key = table, key

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, exc: BaseException | None, trace: object) -> None:
        if exc is None or isinstance(exc, AgcoreError):
            return
        if isinstance(exc, (ValueError, TypeError, KeyError)):
            raise CorruptRecordError(
                f"a row of table {self.table!r} is corrupted and cannot be read "
                f"({type(exc).__name__}: {str(exc)[:200]}); restore the file from a backup or "
                "delete that row",
                table=self.table,
                key=str(self.key),
            ) from exc


def check_timeout(timeout: object) -> float:
    """A finite number of seconds >= 0."""
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, (int, float))
        or not math.isfinite(timeout)
        or timeout < 0
    ):
        raise InvalidInputError(f"timeout must be a finite number of seconds >= 0, got {timeout!r}")
    return float(timeout)


def check_path(path: object) -> str:
    """A path as text; a NUL character or a non-path type is an InvalidInputError."""
    if not isinstance(path, (str, Path)):
        raise InvalidInputError(f"path must be a str or Path, got {type(path).__name__}")
    text = str(path)
    if "\x00" in text:
        raise InvalidInputError(f"path must not contain a NUL character: {text!r}")
    if not text:
        raise InvalidInputError("path must not be empty; use ':memory:' for a store in memory")
    return text

"""Writing ``vector_docs`` rows: multi-row INSERTs that bind what the rows share once.

A row binds eleven values, and most of them are the same in every row of an add: the
namespace, the block, usually the MIME type and the NULL chunk positions. One-row INSERTs
(``executemany``) pay a statement step and eleven bindings per document, which was most of the
cost of writing rows. Here one statement writes up to :data:`ROWS_PER_STATEMENT` rows of one
block: a column whose value is the same for the whole add is one numbered parameter every row
refers to, the slot is that statement's first slot plus the row's place (``?3+k``), and only the
columns that differ (at least the id, the content and ``metadata_json``) are bound per row.

The statements come in a few shapes only (the full size, :data:`SMALL_ROWS`, one row) for each
set of shared columns, so the driver's statement cache keeps them prepared.
"""

from __future__ import annotations

import json.encoder
import operator
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from functools import lru_cache
from itertools import chain, repeat
from typing import Any

from agcore_lab.store._json import _ENCODER, compact

__all__ = ["ROWS_PER_STATEMENT", "SMALL_ROWS", "DocColumns", "Segment", "insert_doc_rows"]

ROWS_PER_STATEMENT = 128
"""The most ``vector_docs`` rows one INSERT writes (also bounded by the block's size and by
SQLite's limit on parameters)."""

SMALL_ROWS = 16
"""The size of the statements that write what is left of a block after the full-size ones
(then single rows): three statement shapes in all."""

# The documents to insert, column by column: contents, metadata dicts, MIME types.
DocColumns = tuple[Sequence[str], Sequence[dict[str, Any]], Sequence[str]]
# A run of documents in one block: (block, its first document's slot, start, stop) where
# start and stop are positions in the add.
Segment = tuple[int, int, int, int]

# The flat columns that may be shared by every row of an add, in the order of the INSERT.
_OPTIONAL = ("source_id", "chunk_index", "start_index", "end_index", "mime_type")
# The columns bound per row whatever the add.
_ALWAYS = ("doc_id", "content", "metadata_json")


def _rows_encoder() -> Callable[[Sequence[Any]], Iterator[str]]:
    """``compact`` of each value, faster for many small values: the C encoder behind
    ``_ENCODER``, built once (``JSONEncoder.encode`` builds a new one per call, most of its cost
    for a small dict), mapped over the values without a Python call per value. Same settings,
    so the same text; no circular-reference check (metadata is JSON data, a tree). ``compact``
    itself where the C accelerator is missing."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return lambda values: map(compact, values)
    encode = make(
        None,
        _ENCODER.default,
        json.encoder.encode_basestring,
        None,
        _ENCODER.key_separator,
        _ENCODER.item_separator,
        False,
        False,
        False,
    )
    return lambda values: map("".join, map(encode, values, repeat(0)))


encode_row_jsons = _rows_encoder()


_NONE = type(None)
_TEXT: frozenset[type] = frozenset({_NONE, str})
_WHOLE: frozenset[type] = frozenset({_NONE, int})


def _text_or_null(value: object) -> object:
    return value if value is None or isinstance(value, str) else None


def _whole_or_null(value: object) -> object:
    if value is None or type(value) is int:
        return value
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _flat_column(
    metas: Sequence[dict[str, Any]],
    key: str,
    plain: frozenset[type],
    keep: Callable[[object], object],
) -> list[Any]:
    """``metadata[key]`` of each document for a flat column: NULL where it is missing or not
    of the column's type. Whole columns at C speed (``map``); a value-by-value pass only when
    some value is of another type than ``plain`` lets through as it is."""
    count = len(metas)
    if not any(map(operator.contains, metas, repeat(key, count))):
        return [None] * count
    values = list(map(operator.methodcaller("get", key), metas))
    if set(map(type, values)) <= plain:
        return values
    return list(map(keep, values))


def _same_throughout(column: Sequence[Any]) -> bool:
    # None, str and int only (the flat columns' values): equal values are stored alike.
    return not column or column.count(column[0]) == len(column)


@lru_cache(maxsize=64)
def _statement(shared: tuple[str, ...], per_row: tuple[str, ...], rows: int) -> str:
    """The INSERT of ``rows`` rows: parameters 1-3 are the namespace, the block and the first
    slot, then one per ``shared`` column, then ``per_row`` parameters for each row."""
    columns = ", ".join(("namespace", "block", "slot", *shared, *per_row))
    first = 4 + len(shared)
    common = "".join(f",?{4 + i}" for i in range(len(shared)))
    values = []
    for k in range(rows):
        own = ",".join(f"?{first + k * len(per_row) + j}" for j in range(len(per_row)))
        values.append(f"(?1,?2,?3{f'+{k}' if k else ''}{common},{own})")
    return f"INSERT OR ROLLBACK INTO vector_docs ({columns}) VALUES {','.join(values)}"


def insert_doc_rows(
    conn: sqlite3.Connection,
    namespace: str,
    ids: Sequence[str],
    documents: DocColumns,
    segments: Sequence[Segment],
    capacity: int,
) -> None:
    """Insert the ``vector_docs`` rows of ``ids`` (their contents, metadata and MIME types as
    three columns, ``documents``), each run of them in ``segments`` in its block from its
    first slot on (a full block, ``capacity`` rows, is one statement when it can be).

    A flat column is NULL unless its value has its type; ``metadata_json`` holds all of the
    metadata. Raises what the driver raises (``IntegrityError`` for an id stored already);
    the caller's transaction holds everything."""
    contents, metas, mime_types = documents
    optional = (
        _flat_column(metas, "source_id", _TEXT, _text_or_null),
        _flat_column(metas, "chunk_index", _WHOLE, _whole_or_null),
        _flat_column(metas, "start_index", _WHOLE, _whole_or_null),
        _flat_column(metas, "end_index", _WHOLE, _whole_or_null),
        mime_types,
    )
    shared = [i for i, column in enumerate(optional) if _same_throughout(column)]
    own = [i for i in range(len(optional)) if i not in shared]
    shared_names = tuple(_OPTIONAL[i] for i in shared)
    per_row = (*_ALWAYS, *(_OPTIONAL[i] for i in own))
    width = len(per_row)
    common = [optional[i][0] if len(ids) else None for i in shared]
    # Every row's own values in one flat list (row after row), built at C speed.
    flat = list(
        chain.from_iterable(
            zip(ids, contents, encode_row_jsons(metas), *(optional[i] for i in own), strict=True)
        )
    )
    limit = conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) - 3 - len(shared)
    full = max(1, min(capacity, ROWS_PER_STATEMENT, limit // width))
    sizes = [size for size in dict.fromkeys((full, SMALL_ROWS, 1)) if size <= full]
    for block, slot, start, stop in segments:
        at = start
        for size in sizes:  # the full size, then what is left in smaller statements
            sql = _statement(shared_names, per_row, size)
            while stop - at >= size:
                head = [namespace, block, slot + at - start, *common]
                conn.execute(sql, head + flat[at * width : (at + size) * width])
                at += size

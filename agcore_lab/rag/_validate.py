"""Argument checks shared by the retrieval classes (vector stores, pipeline, splitter, graph).

Each check raises :class:`~agcore_lab.errors.InvalidInputError` naming the argument and what
would be accepted, before anything is read or written. The rules:

- an iterable of ids may be a bare string, which means that one id (``remove("ab")`` removes
  ``"ab"``, never ``"a"`` and ``"b"``); every id is a string;
- ``k`` is an ``int`` (not ``bool``, float or str) and ``k >= 0``; ``k == 0`` finds nothing;
- counts and sizes (``dim``, ``capacity``, ``chunk_size``) are ``int`` (not ``bool``);
- a filter is ``None`` or a mapping of metadata key to value;
- a vector with every component zero has no direction: refused on ``add`` and as a query.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from agcore_lab.checks import check_count
from agcore_lab.errors import InvalidInputError

__all__ = ["as_float32", "check_count", "check_filter", "check_k", "check_nonzero", "id_list"]


def id_list(ids: Iterable[str] | str, *, name: str = "ids") -> list[str]:
    """The ids as a list; a bare string is one id.

    Example:
        >>> id_list("doc-1"), id_list(["a", "b"])
        (['doc-1'], ['a', 'b'])
    """
    if isinstance(ids, str):
        return [ids]
    if isinstance(ids, (bytes, Mapping)) or not isinstance(ids, Iterable):
        raise InvalidInputError(
            f"{name} must be an id (str) or an iterable of ids, got {type(ids).__name__}"
        )
    out = list(ids)
    for item in out:
        if not isinstance(item, str):
            raise InvalidInputError(
                f"{name} must hold strings; got {type(item).__name__} {item!r:.60}"
            )
    return out


def check_k(k: object) -> int:
    """``k`` as an int, or ``InvalidInputError`` if it is not a non-negative int."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise InvalidInputError(f"k must be an int >= 0, got {type(k).__name__} {k!r:.40}")
    if k < 0:
        raise InvalidInputError(f"k must be >= 0, got {k}")
    return int(k)


def check_filter(filter: object) -> Mapping[str, Any] | None:
    """``None`` or a mapping; a list or a string is refused with an example of the form."""
    if filter is None or isinstance(filter, Mapping):
        return filter
    raise InvalidInputError(
        f"filter must be a mapping of metadata key to value such as "
        f"{{'source_id': 'a.md'}}, got {type(filter).__name__}"
    )


def as_float32(
    values: object, what: str, *, ndmin: int = 0, copy: bool = True
) -> NDArray[np.float32]:
    """A C-contiguous float32 array of ``values`` (a new one, or with ``copy=False`` the
    caller's own when it already is one: to be read, never changed); ragged or non-numeric
    input is an ``InvalidInputError`` (numpy's ``ValueError`` / ``TypeError`` as the cause)."""
    try:
        if not copy:
            return np.ascontiguousarray(np.asarray(values, dtype=np.float32))
        return np.array(values, dtype=np.float32, order="C", copy=True, ndmin=ndmin)
    except (ValueError, TypeError, OverflowError) as exc:
        raise InvalidInputError(
            f"{what} must be numbers in a rectangular array (one row per item, equal "
            f"lengths): {exc}"
        ) from exc


def check_nonzero(vectors: NDArray[np.float32], what: str) -> None:
    """Refuse any row whose components are all zero (cosine is undefined for it)."""
    rows = vectors.reshape(-1, vectors.shape[-1]) if vectors.size else vectors.reshape(0, 0)
    if rows.size and not np.any(rows, axis=1).all():
        first = int(np.flatnonzero(~np.any(rows, axis=1))[0])
        raise InvalidInputError(
            f"{what} {first} is all zeros: it has no direction, so it cannot be compared by "
            "cosine similarity (embed some text, or leave the item out)"
        )

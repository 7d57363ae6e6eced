"""Records built from the store's own rows without a validation pass.

A row the store wrote was validated on the way in (the model it came from), so reading it
back needs no second check: :func:`trusted` fills a pydantic model's fields directly — the
given values plus the field defaults — about 2.5x faster than validating, which is what makes
loading a long history cost little more than fetching its rows. Only for values in the exact
types of the model's fields (a ``datetime`` for a ``datetime`` field, a ``tuple`` for a
tuple), as a validation would have made them.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from pydantic import BaseModel

__all__ = [
    "SET_DICT",
    "SET_EXTRA",
    "SET_FIELDS",
    "SET_PRIVATE",
    "build_all",
    "fields_of",
    "trusted",
]

M = TypeVar("M", bound=BaseModel)
R = TypeVar("R")
T = TypeVar("T")

# The setters of the four slots every pydantic model instance has (through their own
# descriptors): the assignments its constructor makes, at half the cost of
# ``object.__setattr__`` by name. For code that makes many records from known-valid values
# (``_checkpoint_plans``, ``_lean_listing``, ``kg._records``).
SET_DICT, SET_FIELDS, SET_EXTRA, SET_PRIVATE = (
    BaseModel.__dict__[slot].__set__
    for slot in (
        "__dict__",
        "__pydantic_fields_set__",
        "__pydantic_extra__",
        "__pydantic_private__",
    )
)

_Defaults = tuple[dict[str, Any], tuple[tuple[str, Callable[[], Any]], ...], frozenset[str]]
_DEFAULTS: dict[type[BaseModel], _Defaults] = {}


def _defaults(cls: type[BaseModel]) -> _Defaults:
    # A template of every field in the model's order (so a record's repr and dump list its
    # fields as a validated one does), the default factories, and the required fields.
    found = _DEFAULTS.get(cls)
    if found is None:
        template: dict[str, Any] = {}
        factories: list[tuple[str, Callable[[], Any]]] = []
        required: set[str] = set()
        for name, field in cls.model_fields.items():
            template[name] = None
            if field.default_factory is not None:
                factories.append((name, field.default_factory))  # type: ignore[arg-type]
            elif field.is_required():
                required.add(name)
            else:
                template[name] = field.default
        found = _DEFAULTS[cls] = (template, tuple(factories), frozenset(required))
    return found


def trusted(cls: type[M], fields: dict[str, Any], fields_set: set[str] | None = None) -> M:
    """A ``cls`` holding ``fields`` (and the defaults of the others), with no validation.

    ``model_fields_set`` is the given fields, as after a validation of the same dict. A caller
    building many records of a frozen model may pass one ``fields_set`` for all of them
    (nothing changes the set of a frozen model: ``model_copy`` copies it first), which saves
    a set per record — a fifth of a message's memory. The fields are kept in the model's
    order, whatever the order of ``fields``.
    """
    template, factories, required = _defaults(cls)
    values = {**template, **fields}
    for name, factory in factories:
        if name not in fields:
            values[name] = factory()
    if not required <= fields.keys():  # as before: a required field not given is not set
        for name in required - fields.keys():
            del values[name]
    model = cls.__new__(cls)
    _set(model, "__dict__", values)
    _set(model, "__pydantic_fields_set__", set(fields) if fields_set is None else fields_set)
    _set(model, "__pydantic_extra__", None)
    _set(model, "__pydantic_private__", None)
    return model


_set = object.__setattr__


def fields_of(model: BaseModel) -> dict[str, Any]:
    """The model's field values by name (its ``__dict__``: not a copy; do not change it).

    For code that turns a record into a row: every attribute read of a pydantic model goes
    through the ``__getattr__`` hook pydantic gives its models (about four times a plain
    attribute read), and a row reads every field; this is one such read, the rest are dict
    lookups.
    """
    return model.__dict__


def build_all(rows: Iterable[R], build: Callable[[R], T]) -> list[T]:
    """``[build(row) for row in rows]`` with the cyclic garbage collector paused.

    Records built from rows hold no reference cycles, yet each collection triggered while
    thousands of them pile up re-scans all of them: at 20,000 messages that doubled the time
    of a load. The collector is switched back on at once (if it was on), so the records are
    scanned once, later, like any others.
    """
    if not gc.isenabled():
        return [build(row) for row in rows]
    gc.disable()
    try:
        return [build(row) for row in rows]
    finally:
        gc.enable()

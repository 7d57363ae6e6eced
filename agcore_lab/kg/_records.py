"""Records of the graph built without a validation pass, from values already known valid.

pydantic validates a model's fields on construction; when a graph makes many records whose
every value it has just made or checked itself (the entities an import creates for the ids
of a checked table, the results of a walk), :func:`unchecked` sets each instance's four
slots as pydantic's own validator would, over many instances at once. The records are the
same as validated ones: equal to them, with the same fields set, dumps and copies.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from itertools import repeat
from typing import Any, TypeVar

from pydantic import BaseModel

from agcore_lab.kg.types import GraphEntity
from agcore_lab.store._trusted import SET_DICT, SET_EXTRA, SET_FIELDS, SET_PRIVATE

__all__ = ["new_entities", "unchecked"]

M = TypeVar("M", bound=BaseModel)

_consume = deque[object](maxlen=0).extend  # runs an iterator to its end, keeping nothing


def unchecked(cls: type[M], fields: list[dict[str, Any]], fields_set: Iterable[str]) -> list[M]:
    """Instances of ``cls`` with these field dicts as their ``__dict__`` (taken, not copied)
    and ``fields_set`` as the fields given explicitly; every value must already be of its
    field's type.

    ``cls`` is a frozen model without extra fields or private attributes: nothing changes
    an instance's set of given fields after it is made (a copy gets a copy of it), so the
    records share one.
    """
    count = len(fields)
    records: list[M] = list(map(cls.__new__, repeat(cls, count)))
    _consume(map(SET_DICT, records, fields))
    _consume(map(SET_FIELDS, records, repeat(set(fields_set), count)))
    _consume(map(SET_EXTRA, records, repeat(None, count)))
    _consume(map(SET_PRIVATE, records, repeat(None, count)))
    return records


_ID_ONLY = ("id",)


def new_entities(ids: Iterable[str]) -> list[GraphEntity]:
    """``GraphEntity(id=i)`` for each id, in order. Ids that are all non-empty plain ``str``
    (as a checked triples table gives) need no validation; otherwise each entity is
    validated (a ``str`` subclass becomes a plain ``str``; a bad id raises).

    Raises:
        InvalidInputError: An id is not a non-empty string.
    """
    ids = list(ids)
    if not all(type(i) is str and i for i in ids):
        return [GraphEntity(id=i) for i in ids]
    fields = [
        {
            "id": i,
            "name": i,
            "entity_type": "entity",
            "description": "",
            "tags": [],
            "properties": {},
        }
        for i in ids
    ]
    return unchecked(GraphEntity, fields, _ID_ONLY)

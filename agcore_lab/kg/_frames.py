"""Graph data in and out: networkx copies, pandas tables, and triples tables."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import networkx as nx

from agcore_lab.errors import InvalidInputError
from agcore_lab.kg.types import GraphEntity, GraphRelation

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "ENTITY_COLUMNS",
    "RELATION_COLUMNS",
    "Triple",
    "parse_triples",
    "to_dataframes",
    "to_networkx",
]

ENTITY_COLUMNS = ["id", "name", "entity_type", "description", "tags", "properties"]
RELATION_COLUMNS = ["source", "relation_type", "target", "weight", "properties"]
Triple = tuple[str, str, str, float]


def to_networkx(
    entities: Iterable[GraphEntity], relations: Iterable[GraphRelation]
) -> nx.MultiDiGraph:
    """A new ``MultiDiGraph``: nodes carry the entity fields, edges are keyed by relation type."""
    graph = nx.MultiDiGraph()
    for entity in entities:
        graph.add_node(entity.id, **entity.model_dump(exclude={"id"}))
    for rel in relations:
        graph.add_edge(
            rel.source,
            rel.target,
            key=rel.relation_type,
            relation_type=rel.relation_type,
            weight=rel.weight,
            properties=dict(rel.properties),
        )
    return graph


def to_dataframes(
    entities: Iterable[GraphEntity], relations: Iterable[GraphRelation]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(entities, relations)``: one row per entity (sorted by id) and per relation."""
    import pandas as pd  # lazy: pandas is only needed here

    entity_rows = [e.model_dump() for e in sorted(entities, key=lambda e: e.id)]
    relation_rows = [r.model_dump() for r in sorted(relations, key=lambda r: r.key)]
    return (
        pd.DataFrame(entity_rows, columns=ENTITY_COLUMNS),
        pd.DataFrame(relation_rows, columns=RELATION_COLUMNS),
    )


def _text(value: Any, column: str, row: int) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidInputError(
            f"triples row {row}: {column!r} must be a non-empty string, got {value!r}",
            row=row,
            column=column,
        )
    return value


def _weight(value: Any, row: int) -> float:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return 1.0
    try:
        weight = float(value)
    except (TypeError, ValueError):
        weight = math.nan
    if not math.isfinite(weight) or weight < 0:
        raise InvalidInputError(
            f"triples row {row}: weight must be a finite number >= 0, got {value!r}", row=row
        )
    return weight


def parse_triples(triples: pd.DataFrame) -> list[Triple]:
    """Validate a ``source, relation, target[, weight]`` table; a missing weight is 1.

    Raises:
        InvalidInputError: A column is missing, or a row has an empty id or a bad weight
            (the message names the row).
    """
    if not hasattr(triples, "columns"):
        raise InvalidInputError(
            f"triples must be a pandas DataFrame with columns source, relation, target "
            f"(and optionally weight), got {type(triples).__name__}; "
            "pd.DataFrame(rows, columns=[...]) makes one"
        )
    missing = [c for c in ("source", "relation", "target") if c not in triples.columns]
    if missing:
        raise InvalidInputError(
            f"a triples table needs the columns source, relation, target; missing {missing}",
            columns=list(map(str, triples.columns)),
        )
    has_weight = "weight" in triples.columns
    fast = _parse_columns(triples, has_weight)
    if fast is not None:
        return fast
    # Something is off (or unusual, such as a str subclass): the row-by-row check names it.
    parsed: list[Triple] = []
    for row, record in enumerate(triples.to_dict("records")):
        parsed.append(
            (
                _text(record["source"], "source", row),
                _text(record["relation"], "relation", row),
                _text(record["target"], "target", row),
                _weight(record["weight"], row) if has_weight else 1.0,
            )
        )
    return parsed


def _parse_columns(triples: pd.DataFrame, has_weight: bool) -> list[Triple] | None:
    """The triples of a well-formed table, checked a column at a time; ``None`` when any
    value needs the row-by-row check (which then raises the error for the first bad row)."""
    import numpy as np  # numpy comes with pandas

    texts = [triples[c].tolist() for c in ("source", "relation", "target")]
    for values in texts:
        if not all(type(v) is str and v for v in values):
            return None
    if not has_weight:
        return [(s, r, t, 1.0) for s, r, t in zip(*texts, strict=True)]
    column = triples["weight"]
    if column.dtype.kind not in "fiu":
        return None
    weights = column.to_numpy(dtype=np.float64, copy=True)
    weights[np.isnan(weights)] = 1.0
    if not (np.isfinite(weights).all() and (weights >= 0).all()):
        return None
    return list(zip(*texts, weights.tolist(), strict=True))

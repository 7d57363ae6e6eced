"""Bulk loading: the graph's own writes into networkx, and the entities an import makes."""

from __future__ import annotations

import copy
import pickle

import networkx as nx
import pandas as pd
import pytest

from agcore_lab.errors import InvalidInputError
from agcore_lab.kg import InMemoryGraph
from agcore_lab.kg._load import add_edges, add_nodes
from agcore_lab.kg._records import new_entities
from agcore_lab.kg.types import GraphEntity, GraphRelation

_EDGES = [
    ("a", "b", "cites", {"weight": 0.5}),
    ("b", "a", "cites", {"weight": 0.25}),
    ("a", "b", "uses", {"weight": 1.0, "properties": {"page": 3}}),
    ("a", "b", "cites", {"weight": 0.75}),  # the same edge again: its data is updated
    ("c", "c", "part_of", {"weight": 0.1}),
]


def _loaded(start: nx.MultiDiGraph) -> nx.MultiDiGraph:
    add_nodes(start, [e for row in _EDGES for e in row[:2]])
    add_edges(start, (row[:3] + (dict(row[3]),) for row in _EDGES))
    return start


def _start() -> nx.MultiDiGraph:
    graph = nx.MultiDiGraph()
    graph.add_node("a", kind="kept")
    graph.add_edge("a", "b", key="uses", weight=0.2, note="kept")
    return graph


def test_bulk_writes_leave_the_graph_as_networkx_add_edges_from_does() -> None:
    ours = _loaded(_start())
    theirs = _start()
    theirs.add_nodes_from(e for row in _EDGES for e in row[:2])
    theirs.add_edges_from(row[:3] + (dict(row[3]),) for row in _EDGES)
    assert ours._node == theirs._node and ours.nodes["a"] == {"kind": "kept"}
    assert ours._succ == theirs._succ and ours._pred == theirs._pred
    assert ours.edges["a", "b", "uses"] == {
        "weight": 1.0,
        "note": "kept",
        "properties": {"page": 3},
    }
    # One key dict per node pair, read from both sides (networkx's own layout).
    assert ours._succ["b"]["a"] is ours._pred["a"]["b"]
    assert ours.number_of_edges() == theirs.number_of_edges() == 4
    assert sorted(ours.edges(keys=True, data="weight")) == sorted(
        theirs.edges(keys=True, data="weight")
    )


def test_bulk_writes_drop_networkx_cached_conversions() -> None:
    graph = _start()
    cache = getattr(graph, "__networkx_cache__", None)
    if cache is None:
        pytest.skip("this networkx keeps no conversion cache")
    cache["backends"] = {"stale": object()}
    add_nodes(graph, ["z"])
    assert cache == {}
    cache["backends"] = {"stale": object()}
    add_edges(graph, [("z", "a", "r", {"weight": 1.0})])
    assert cache == {}


def test_entities_an_import_makes_are_the_validated_models() -> None:
    made = new_entities(["ada", "bob"])
    expected = [GraphEntity(id="ada"), GraphEntity(id="bob")]
    assert made == expected and [type(e) for e in made] == [GraphEntity] * 2
    assert [e.model_dump() for e in made] == [e.model_dump() for e in expected]
    assert [repr(e) for e in made] == [repr(e) for e in expected]
    assert made[0].model_fields_set == expected[0].model_fields_set == {"id"}
    assert made[0].model_dump(exclude_unset=True) == {"id": "ada"}
    assert pickle.loads(pickle.dumps(made)) == expected
    assert copy.deepcopy(made[1]) == expected[1]
    assert made[0].tags is not made[1].tags and made[0].properties is not made[1].properties
    renamed = made[0].model_copy(update={"name": "Ada"})
    assert renamed.name == "Ada" and made[0].name == "ada"
    assert renamed.model_fields_set == {"id", "name"} and made[0].model_fields_set == {"id"}
    with pytest.raises(ValueError, match="frozen"):
        made[0].name = "x"  # type: ignore[misc]


def test_ids_that_are_not_plain_strings_are_validated() -> None:
    class Name(str):
        pass

    (made,) = new_entities([Name("ada")])
    assert type(made.id) is str and made == GraphEntity(id="ada")
    with pytest.raises(InvalidInputError):
        new_entities(["ok", ""])


def test_an_import_over_existing_relations_keeps_their_properties() -> None:
    graph = InMemoryGraph()
    for name in "ab":
        graph.add_entity_sync(GraphEntity(id=name, description=f"the {name}"))
    graph.add_relation_sync(
        GraphRelation(source="a", target="b", relation_type="r", properties={"p": 1})
    )
    table = pd.DataFrame(
        {"source": ["a", "b", "a"], "relation": ["r", "r", "r"], "target": ["b", "c", "b"]}
    ).assign(weight=[0.5, 0.25, 0.75])
    assert graph.import_triples_sync(table) == 3
    frame = graph.to_dataframes()[1].set_index(["source", "target"])
    assert frame.loc[("a", "b"), "weight"] == 0.75
    assert frame.loc[("a", "b"), "properties"] == {"p": 1}
    assert frame.loc[("b", "c"), "properties"] == {}
    assert graph.get_entity_sync("a") == GraphEntity(id="a", description="the a")
    assert graph.get_entity_sync("c") == GraphEntity(id="c")
    assert [r.entity.id for r in graph.get_related_sync("a", depth=2)] == ["b", "c"]

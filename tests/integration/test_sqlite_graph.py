"""SqliteGraph on a real file: persist and reopen, two stores on one file, two processes."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from agcore_lab.kg import GraphEntity, GraphRelation, RelationDirection, SqliteGraph
from agcore_lab.store.sqlite import SqliteStore

pytestmark = pytest.mark.timeout(120)

# A writer process: opens the file, waits for the go file, then adds `count` entities, each
# linked to the shared hub, one transaction at a time (interleaving with the other writer).
WRITER = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    from agcore_lab.kg import GraphEntity, GraphRelation, SqliteGraph
    from agcore_lab.store.sqlite import SqliteStore

    path, name, count, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
    graph = SqliteGraph(SqliteStore(path), "shared")
    while not go.exists():
        time.sleep(0.01)
    for i in range(count):
        graph.add_entity_sync(GraphEntity(id=f"{name}-{i}", tags=[name]))
        graph.add_relation_sync(GraphRelation(source="hub", target=f"{name}-{i}", weight=0.5))
    print(json.dumps({"len": len(graph)}))
    """
)


def _sample(graph: SqliteGraph) -> None:
    graph.add_entity_sync(
        GraphEntity(
            id="ada",
            name="Ada Lovelace",
            entity_type="person",
            description="first programmer",
            tags=["math", "computing"],
            properties={"born": 1815, "letters": ["Babbage"]},
        )
    )
    graph.add_entity_sync(GraphEntity(id="engine", entity_type="machine", tags=["computing"]))
    graph.add_entity_sync(GraphEntity(id="babbage", entity_type="person"))
    graph.add_relation_sync(
        GraphRelation(
            source="ada",
            target="engine",
            relation_type="programmed",
            weight=0.9,
            properties={"year": 1843},
        )
    )
    graph.add_relation_sync(
        GraphRelation(source="babbage", target="engine", relation_type="designed", weight=0.8)
    )


def test_persist_and_reopen(tmp_path: Path) -> None:
    path = tmp_path / "lab.db"
    first = SqliteGraph(SqliteStore(path), "people")
    _sample(first)
    first.import_triples_sync(
        pd.DataFrame({"source": ["engine"], "relation": ["inspired"], "target": ["turing"]})
    )
    first.remove_relation_sync("babbage", "designed", "engine")
    first.store.close()

    again = SqliteGraph(SqliteStore(path), "people")
    assert again.to_dataframes()[0].equals(first.to_dataframes()[0])
    assert again.to_dataframes()[1].equals(first.to_dataframes()[1])
    assert again.get_entity_sync("ada") == first.get_entity_sync("ada")
    found = again.get_related_sync("ada", 2)
    assert [(r.entity.id, r.score, r.path) for r in found] == [
        ("engine", 0.9, ["ada", "engine"]),
        ("turing", 0.9, ["ada", "engine", "turing"]),
    ]
    assert [e.id for e in again.find_tags_sync(["computing"])] == ["ada", "engine"]
    assert again.get_related_sync("engine", 1, RelationDirection.Incoming)[0].entity.id == "ada"
    edge = again.to_networkx().edges["ada", "engine", "programmed"]
    assert edge["properties"] == {"year": 1843}
    assert len(SqliteGraph(SqliteStore(path), "other")) == 0


def test_two_stores_on_one_file(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    one = SqliteGraph(SqliteStore(path))
    two = SqliteGraph(SqliteStore(path))
    _sample(one)
    assert len(two) == 0  # loaded once, when opened
    two.reload()
    assert len(two) == 3 and two.relation_count == 2
    # Both write; each write is its own row, so neither loses the other's.
    two.add_entity_sync(GraphEntity(id="turing"))
    two.add_relation_sync(GraphRelation(source="engine", target="turing", relation_type="inspired"))
    one.remove_entity_sync("babbage")
    three = SqliteGraph(SqliteStore(path))
    assert sorted(three.to_dataframes()[0]["id"]) == ["ada", "engine", "turing"]
    assert [r.entity.id for r in three.get_related_sync("ada", 2)] == ["engine", "turing"]


def test_two_processes_write_one_graph(tmp_path: Path) -> None:
    path, go = tmp_path / "procs.db", tmp_path / "go"
    SqliteGraph(SqliteStore(path), "shared").add_entity_sync(GraphEntity(id="hub"))
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), name, "20", str(go)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for name in ("left", "right")
    ]
    go.touch()
    outputs = [json.loads(p.communicate(timeout=100)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert all(out["len"] >= 21 for out in outputs)
    graph = SqliteGraph(SqliteStore(path), "shared")
    assert len(graph) == 41
    related = graph.get_related_sync("hub")
    assert len(related) == 40 and all(r.score == 0.5 for r in related)
    assert len(graph.find_tags_sync(["left", "right"])) == 40

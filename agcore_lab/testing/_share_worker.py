"""A second process for the persistence conformance suite.

``python -m agcore_lab.testing._share_worker COMMAND STORE_URL NAMESPACE [IDS...]`` opens the
namespace through :func:`~agcore_lab.rag.open_vectors.open_vector_store` or
:func:`~agcore_lab.kg.open_graph.open_graph` and prints one JSON line:

- ``vectors-add`` adds documents ``IDS`` (mock embeddings of ``content of <id>``);
- ``vectors-ids`` prints the ids stored;
- ``graph-add`` adds entities ``IDS``, each linked from ``hub`` (``hub`` first, if missing);
- ``graph-ids`` prints the entity ids stored.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence


def main(argv: Sequence[str]) -> int:
    command, url, namespace, *ids = argv
    if command.startswith("vectors"):
        from agcore_lab.rag.open_vectors import open_vector_store
        from agcore_lab.testing.vector_conformance import docs, embed

        vectors = open_vector_store(url, namespace)
        if command == "vectors-add":
            batch = docs(*ids, by="worker")
            vectors.add(batch, embed(batch))
        print(json.dumps({"ids": vectors.ids()}))
        vectors.store.close()  # type: ignore[attr-defined]
        return 0
    from agcore_lab.kg.open_graph import open_graph
    from agcore_lab.kg.types import GraphEntity, GraphRelation

    graph = open_graph(url, namespace)
    if command == "graph-add":
        if "hub" not in graph:
            graph.add_entity_sync(GraphEntity(id="hub"))
        for entity_id in ids:
            graph.add_entity_sync(GraphEntity(id=entity_id, tags=["worker"]))
            graph.add_relation_sync(GraphRelation(source="hub", target=entity_id, weight=0.5))
    print(json.dumps({"ids": sorted(graph.to_dataframes()[0]["id"])}))
    graph.store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""The explorer's reads of a knowledge graph: a neighbourhood (cut to ``max_nodes``) or the
whole graph, as entities and ``(source, target, label)`` edges. No widgets here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agcore_lab.kg.types import EntityNotFoundError, GraphEntity, RelationDirection, ScoredEntity

if TYPE_CHECKING:
    from agcore_lab.kg.base import KnowledgeGraph

__all__ = ["Edge", "neighbourhood", "whole"]

Edge = tuple[str, str, str]


async def neighbourhood(
    graph: KnowledgeGraph,
    entity_id: str,
    depth: int,
    direction: RelationDirection,
    *,
    max_nodes: int,
    entity_count: int,
) -> tuple[GraphEntity, list[ScoredEntity], list[Edge], str]:
    """The entity, its related entities (best first, at most ``max_nodes - 1``), the edges
    between them, and a message saying what was cut.

    Raises:
        EntityNotFoundError: No such entity.
    """
    too_big = entity_count > max_nodes
    entity = await graph.get_entity(entity_id)
    if entity is None:
        raise EntityNotFoundError(f"no entity {entity_id!r} in the graph", entity_id=entity_id)
    related = await graph.get_related(entity_id, depth=depth, direction=direction)
    message = ""
    if too_big:
        message = (
            f"The graph has {entity_count} entities, more than max_nodes="
            f"{max_nodes}: only the neighbourhood of one entity is shown."
        )
    if len(related) + 1 > max_nodes:
        message = (message + " " if message else "") + (
            f"Showing the {max_nodes - 1} best of {len(related)} related entities."
        )
        related = related[: max_nodes - 1]
    shown = {entity_id, *(r.entity.id for r in related)}
    edges: list[tuple[str, str, str]] = []
    if not too_big:
        nx_graph = graph.to_networkx()
        for source, target, key in nx_graph.subgraph(shown).edges(keys=True):
            edges.append((source, target, str(key)))
    else:
        seen: set[tuple[str, str]] = set()
        for r in related:
            for a, b in zip(r.path, r.path[1:], strict=False):
                pair = (b, a) if direction is RelationDirection.Incoming else (a, b)
                if pair not in seen:
                    seen.add(pair)
                    edges.append((*pair, ""))
    return entity, related, edges, message


def whole(graph: KnowledgeGraph) -> tuple[list[GraphEntity], list[Edge]]:
    """Every entity and relation of ``graph``."""
    nx_graph = graph.to_networkx()
    entities = [GraphEntity(**{**attrs, "id": node}) for node, attrs in nx_graph.nodes(data=True)]
    edges = [(s, t, str(k)) for s, t, k in nx_graph.edges(keys=True)]
    return entities, edges

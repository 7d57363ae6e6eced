"""Keyword search over entities, behind ``KnowledgeGraph.find_by_keywords``."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from agcore_lab.errors import InvalidInputError
from agcore_lab.kg.types import GraphEntity, ScoredEntity

__all__ = ["match_keywords"]


def match_keywords(
    entities: Iterable[GraphEntity], keywords: str | Sequence[str], limit: int
) -> list[ScoredEntity]:
    """Entities matching the keywords (case-insensitive substrings), best first.

    A string is split on whitespace. Each keyword scores 2 when it occurs in the name and 1
    when it occurs only in the type, description or tags; an entity's score is its total over
    ``2 * len(keywords)`` (so in ``(0, 1]``). Ties are broken by id.

    Raises:
        InvalidInputError: ``limit`` is negative.
    """
    if limit < 0:
        raise InvalidInputError(f"limit must be >= 0, got {limit}")
    words = keywords.split() if isinstance(keywords, str) else list(keywords)
    terms = list(dict.fromkeys(w.strip().lower() for w in words if w.strip()))
    if not terms or limit == 0:
        return []
    scored: list[ScoredEntity] = []
    for entity in entities:
        name = entity.name.lower()
        rest = " ".join([entity.entity_type, entity.description, *entity.tags]).lower()
        hits = sum(2 if t in name else 1 if t in rest else 0 for t in terms)
        if hits:
            scored.append(
                ScoredEntity(entity=entity, score=hits / (2 * len(terms)), path=[entity.id])
            )
    scored.sort(key=lambda s: (-s.score, s.entity.id))
    return scored[:limit]

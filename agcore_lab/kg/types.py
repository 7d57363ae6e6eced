"""The records of a knowledge graph: entities, relations, scored results and tag limits.

A relation is identified by ``(source, relation_type, target)``: adding one with the same three
again updates its weight and properties instead of adding a second edge.
"""

from __future__ import annotations

import math
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator

from agcore_lab.checks import CheckedModel
from agcore_lab.errors import EntityNotFoundError

__all__ = [
    "EntityNotFoundError",
    "GraphEntity",
    "GraphRelation",
    "RelationDirection",
    "RelationKey",
    "ScoredEntity",
    "TagConstraints",
]

RelationKey = tuple[str, str, str]
"""``(source, relation_type, target)``: what identifies a relation."""


class GraphEntity(CheckedModel):
    """One node of the graph.

    Args:
        id: Unique within the graph.
        name: Display name (defaults to the id).
        entity_type: A free-form kind such as ``"person"`` or ``"paper"``.
        description: Free text, searched by ``find_by_keywords``.
        tags: Labels, found through a reverse index; duplicates are dropped, order kept.
        properties: Any JSON detail.

    Example:
        >>> GraphEntity(id="ada", entity_type="person", tags=["math", "math"]).tags
        ['math']
    """

    model_config = ConfigDict(frozen=True)

    id: str = Field(min_length=1)
    name: str = ""
    entity_type: str = "entity"
    description: str = ""
    tags: list[str] = Field(default_factory=list)
    properties: dict[str, JsonValue] = Field(default_factory=dict)

    def model_post_init(self, context: Any) -> None:
        if not self.name:
            object.__setattr__(self, "name", self.id)

    @field_validator("tags")
    @classmethod
    def _unique_tags(cls, tags: list[str]) -> list[str]:
        if any(not tag for tag in tags):
            raise ValueError("tags must be non-empty strings")
        return list(dict.fromkeys(tags))


class GraphRelation(CheckedModel):
    """One directed, typed, weighted edge ``source -[relation_type]-> target``.

    Args:
        source: The id of the entity it starts at.
        target: The id of the entity it points to.
        relation_type: What the relation means, such as ``"cites"``.
        weight: A finite, non-negative number; a walk's score is the product of the weights
            along its path, so weights in ``[0, 1]`` keep scores in ``[0, 1]``.
        properties: Any JSON detail.
    """

    model_config = ConfigDict(frozen=True)

    source: str = Field(min_length=1)
    target: str = Field(min_length=1)
    relation_type: str = Field(default="related_to", min_length=1)
    weight: float = 1.0
    properties: dict[str, JsonValue] = Field(default_factory=dict)

    @field_validator("weight")
    @classmethod
    def _finite_weight(cls, weight: float) -> float:
        if not math.isfinite(weight) or weight < 0:
            raise ValueError(f"weight must be finite and >= 0, got {weight!r}")
        return weight

    @property
    def key(self) -> RelationKey:
        """``(source, relation_type, target)``, the relation's identity."""
        return (self.source, self.relation_type, self.target)


class RelationDirection(StrEnum):
    """Which relations a walk follows from each entity."""

    Outgoing = "outgoing"
    """From source to target (the default)."""
    Incoming = "incoming"
    """From target back to source."""
    Both = "both"
    """Either way."""


class ScoredEntity(BaseModel):
    """An entity found by a walk or a search.

    Attributes:
        entity: The entity.
        score: For a walk, the product of the relation weights along ``path``; for a keyword
            search, the share of the keywords it matched (see ``find_by_keywords``).
        path: Entity ids from the start of the walk to this entity (both included); for a
            keyword search, just this entity's id.
    """

    model_config = ConfigDict(frozen=True)

    entity: GraphEntity
    score: float
    path: list[str]


class TagConstraints(CheckedModel):
    """Limits on tags.

    Args:
        max_tags_per_entity: More tags than this on one entity is an ``InvalidInputError``.
    """

    model_config = ConfigDict(frozen=True)

    max_tags_per_entity: int = Field(default=8, ge=1)

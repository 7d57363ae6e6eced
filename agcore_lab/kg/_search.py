"""Keyword search over entities, behind ``KnowledgeGraph.find_by_keywords``.

:func:`match_keywords` is the rule, as a scan. :class:`KeywordIndex` gives the same answers
from an index kept up to date on every write: each entity's lower-cased name and the rest of
its searchable text (type, description, tags), and a map from every three-character substring
(trigram) to the entities whose text holds it. A keyword of three or more characters can only
occur in an entity that holds all of its trigrams, so only those candidates are checked;
shorter keywords scan the lower-cased strings (done once per entity, not once per query).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from pydantic import TypeAdapter

from agcore_lab.errors import InvalidInputError
from agcore_lab.kg.types import GraphEntity, ScoredEntity

__all__ = ["KeywordIndex", "match_keywords"]

_SCORED = TypeAdapter(list[ScoredEntity])


def _terms(keywords: str | Sequence[str], limit: int) -> list[str]:
    if limit < 0:
        raise InvalidInputError(f"limit must be >= 0, got {limit}")
    words = keywords.split() if isinstance(keywords, str) else list(keywords)
    return list(dict.fromkeys(w.strip().lower() for w in words if w.strip()))


def _lowered(entity: GraphEntity) -> tuple[str, str]:
    """(name, the rest of the searchable text), lower-cased."""
    rest = " ".join([entity.entity_type, entity.description, *entity.tags])
    return entity.name.lower(), rest.lower()


def _results(
    entities: Mapping[str, GraphEntity], hits: Iterable[tuple[int, str]], terms: int, limit: int
) -> list[ScoredEntity]:
    """The best ``limit`` of ``(hits, entity id)``: score ``hits / (2 * terms)``, ties by id."""
    best = sorted(hits, key=lambda hit: (-hit[0], hit[1]))[:limit]
    return _SCORED.validate_python(
        [
            {"entity": entities[eid], "score": count / (2 * terms), "path": [eid]}
            for count, eid in best
        ]
    )


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
    terms = _terms(keywords, limit)
    if not terms or limit == 0:
        return []
    by_id: dict[str, GraphEntity] = {}
    hits: list[tuple[int, str]] = []
    for entity in entities:
        name, rest = _lowered(entity)
        count = sum(2 if t in name else 1 if t in rest else 0 for t in terms)
        if count:
            by_id[entity.id] = entity
            hits.append((count, entity.id))
    return _results(by_id, hits, len(terms), limit)


def _trigrams(text: str) -> set[str]:
    return {text[i : i + 3] for i in range(len(text) - 2)}


class KeywordIndex:
    """The index behind :meth:`InMemoryGraph.find_by_keywords`; same answers as
    :func:`match_keywords`.

    Built from the entities on the first search (so bulk imports do not pay for it), then
    kept up to date by :meth:`put` and :meth:`discard`. Not thread-safe: the graph's lock
    guards it.
    """

    def __init__(self) -> None:
        self._built = False
        self._text: dict[str, tuple[str, str]] = {}
        self._grams: dict[str, set[str]] = {}

    def clear(self) -> None:
        """Forget everything (the next search builds the index again)."""
        self._built = False
        self._text, self._grams = {}, {}

    def put(self, entity: GraphEntity) -> None:
        """Index ``entity`` (replacing what was indexed under its id)."""
        if not self._built:
            return
        self.discard(entity.id)
        self._add(entity)

    def _add(self, entity: GraphEntity) -> None:
        name, rest = self._text[entity.id] = _lowered(entity)
        grams = self._grams
        for gram in _trigrams(name) | _trigrams(rest):
            owners = grams.get(gram)
            if owners is None:
                grams[gram] = {entity.id}
            else:
                owners.add(entity.id)

    def discard(self, entity_id: str) -> None:
        """Drop the entity from the index (unknown ids are ignored)."""
        text = self._text.pop(entity_id, None)
        if text is None:
            return
        for gram in _trigrams(text[0]) | _trigrams(text[1]):
            owners = self._grams[gram]
            owners.discard(entity_id)
            if not owners:
                del self._grams[gram]

    def _candidates(self, term: str) -> Iterable[str]:
        if len(term) < 3:
            return self._text
        owners = []
        for gram in _trigrams(term):
            found = self._grams.get(gram)
            if found is None:
                return ()
            owners.append(found)
        owners.sort(key=len)
        return owners[0].intersection(*owners[1:])

    def search(
        self, entities: Mapping[str, GraphEntity], keywords: str | Sequence[str], limit: int
    ) -> list[ScoredEntity]:
        """:func:`match_keywords` over ``entities`` (the graph's id -> entity map).

        Raises:
            InvalidInputError: ``limit`` is negative.
        """
        terms = _terms(keywords, limit)
        if not terms or limit == 0:
            return []
        if not self._built:
            self._built = True
            for entity in entities.values():
                self._add(entity)
        counts: dict[str, int] = {}
        text = self._text
        for term in terms:
            for eid in self._candidates(term):
                name, rest = text[eid]
                if term in name:
                    counts[eid] = counts.get(eid, 0) + 2
                elif term in rest:
                    counts[eid] = counts.get(eid, 0) + 1
        return _results(entities, ((c, eid) for eid, c in counts.items()), len(terms), limit)

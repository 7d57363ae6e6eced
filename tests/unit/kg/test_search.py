"""The keyword index answers exactly as the plain scan, through adds, replacements and removals."""

from __future__ import annotations

import random

from agcore_lab.kg import GraphEntity, InMemoryGraph
from agcore_lab.kg._search import match_keywords

ALPHABET = "abcAB İß xy"


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 6))).strip() or "a"


def _entity(rng: random.Random, eid: str) -> GraphEntity:
    return GraphEntity(
        id=eid,
        name=_word(rng) if rng.random() < 0.8 else "",
        entity_type=_word(rng),
        description=" ".join(_word(rng) for _ in range(rng.randint(0, 4))),
        tags=list({_word(rng) for _ in range(rng.randint(0, 3))}),
    )


def test_index_matches_the_scan_through_writes() -> None:
    rng = random.Random(16)
    graph = InMemoryGraph()
    for i in range(300):
        graph.add_entity_sync(_entity(rng, f"e{i}"))
    queries = [" ".join(_word(rng) for _ in range(rng.randint(1, 3))) for _ in range(60)]
    queries += ["", "   ", "abc", "İ", "ß", "xy ab", "nothing-like-this"]
    for round_ in range(4):
        entities = [e for e in (graph.get_entity_sync(f"e{i}") for i in range(400)) if e]
        for query in queries:
            limit = rng.choice([0, 1, 5, 1000])
            expected = match_keywords(entities, query, limit)
            assert graph.find_by_keywords_sync(query, limit) == expected, (round_, query)
        # Writes after the index is built: replace, tag, remove and add entities.
        for i in rng.sample(range(300), 40):
            graph.add_entity_sync(_entity(rng, f"e{i}"))
        for i in rng.sample(range(300), 20):
            graph.remove_entity_sync(f"e{i}")
        for i in rng.sample(range(300), 20):
            if graph.get_entity_sync(f"e{i}") is not None:
                graph.set_entity_tags_sync(f"e{i}", [_word(rng)])
        for i in range(300 + 25 * round_, 325 + 25 * round_):
            graph.add_entity_sync(_entity(rng, f"e{i}"))


def test_a_removed_entity_is_not_found_and_a_renamed_one_is_found_by_its_new_name() -> None:
    graph = InMemoryGraph()
    graph.add_entity_sync(GraphEntity(id="ada", name="Ada Lovelace"))
    assert [r.entity.id for r in graph.find_by_keywords_sync("lovelace")] == ["ada"]
    graph.add_entity_sync(GraphEntity(id="ada", name="Countess"))
    assert graph.find_by_keywords_sync("lovelace") == []
    assert [r.entity.id for r in graph.find_by_keywords_sync("COUNT")] == ["ada"]
    graph.remove_entity_sync("ada")
    assert graph.find_by_keywords_sync("count") == []


def test_import_fast_path_reads_the_table_as_the_row_by_row_check_does() -> None:
    import numpy as np
    import pandas as pd

    from agcore_lab.kg._frames import parse_triples

    table = pd.DataFrame(
        {
            "source": ["a", "b", "a"],
            "relation": ["r", "r", "r"],
            "target": ["b", "c", "b"],
            "weight": [0.5, np.nan, 2],
        }
    )
    assert parse_triples(table) == [
        ("a", "r", "b", 0.5),
        ("b", "r", "c", 1.0),
        ("a", "r", "b", 2.0),
    ]
    ints = table.assign(weight=[1, 2, 3])
    assert [w for *_, w in parse_triples(ints)] == [1.0, 2.0, 3.0]
    # A str subclass and an object column go through the row-by-row check, with the same result.
    odd = table.assign(
        source=[np.str_("a"), "b", "a"], weight=pd.Series([0.5, None, 2], dtype=object)
    )
    assert parse_triples(odd) == parse_triples(table)
    graph = InMemoryGraph()
    assert graph.import_triples_sync(table) == 3
    assert graph.relation_count == 2
    assert graph.to_dataframes()[1]["weight"].tolist() == [2.0, 1.0]  # the last row wins

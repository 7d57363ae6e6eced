"""``KnowledgeStore``: entries, TF-IDF keyword search and semantic search."""

from __future__ import annotations

import pytest

from agcore_lab import HashingEmbedding, InvalidInputError, KnowledgeEntry, KnowledgeStore


def _store(**kwargs: object) -> KnowledgeStore:
    store = KnowledgeStore(**kwargs)  # type: ignore[arg-type]
    store.add("fork", "Forking a slot copies its messages into a new branch.", tags=["slots"])
    store.add("merge", "Merging brings a forked branch back into the parent slot.")
    store.add("cost", "The cost tracker sums token prices per model.", metadata={"v": 1})
    return store


def test_add_get_remove_list() -> None:
    store = _store()
    assert len(store) == 3 and "fork" in store
    assert store.get("cost") == KnowledgeEntry(
        id="cost", text="The cost tracker sums token prices per model.", metadata={"v": 1}
    )
    assert [e.id for e in store.list()] == ["cost", "fork", "merge"]
    assert [e.id for e in store.list(tag="slots")] == ["fork"]
    store.add("fork", "Replaced text about tokens.")
    assert store.get("fork") is not None and store.get("fork").text.startswith("Replaced")  # type: ignore[union-attr]
    assert store.remove("fork") is True and store.remove("fork") is False
    assert store.get("fork") is None and len(store) == 2


def test_entry_validation() -> None:
    assert KnowledgeEntry(id="a", text="x", tags=["t", "t"]).tags == ["t"]
    with pytest.raises(ValueError):
        KnowledgeEntry(id="", text="x")
    with pytest.raises(ValueError):
        KnowledgeEntry(id="a", text="x", tags=[""])


def test_keyword_search_ranks_and_scores_in_unit_interval() -> None:
    store = _store()
    found = store.search("forked branch slot", k=5, mode="keyword")
    assert [s.entry.id for s in found][:2] in (["merge", "fork"], ["fork", "merge"])
    assert all(0.0 < s.score <= 1.0 for s in found)
    assert "cost" not in [s.entry.id for s in found]
    assert found == sorted(found, key=lambda s: (-s.score, s.entry.id))
    assert store.search("cost tracker", k=1)[0].entry.id == "cost"
    assert store.search("nothing-matches-this", k=3) == []
    assert store.search("", k=3) == []
    assert store.search("slot", k=0) == []


def test_keyword_index_refits_after_changes() -> None:
    store = _store()
    assert store.search("zebra") == []
    store.add("zoo", "A zebra lives here.")
    assert [s.entry.id for s in store.search("zebra")] == ["zoo"]
    store.remove("zoo")
    assert store.search("zebra") == []


def test_identical_text_scores_one() -> None:
    store = KnowledgeStore([KnowledgeEntry(id="a", text="alpha beta")])
    assert store.search("alpha beta")[0].score == pytest.approx(1.0)


def test_empty_store_and_stopword_only_vocabulary() -> None:
    assert KnowledgeStore().search("anything") == []
    store = KnowledgeStore([KnowledgeEntry(id="a", text="!!")])
    assert store.search("anything") == []


def test_semantic_search_needs_an_embedding() -> None:
    with pytest.raises(InvalidInputError, match="embedding"):
        _store().search("slot", mode="semantic")
    with pytest.raises(InvalidInputError):
        _store().search("slot", mode="fuzzy")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        _store().search("slot", k=-1)


def test_semantic_search_with_hashing_embedding() -> None:
    store = _store(embedding=HashingEmbedding(dim=512))
    found = store.search("forking slots", k=2)  # auto -> semantic
    assert found[0].entry.id == "fork"
    assert all(0.0 < s.score <= 1.0 for s in found)
    assert store.search("forking slots", k=2, mode="keyword")[0].entry.id == "fork"
    store.remove("fork")
    assert "fork" not in [s.entry.id for s in store.search("forking slots", k=3)]
    assert store.search("   ", mode="semantic") == []

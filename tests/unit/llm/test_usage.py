"""``Usage``, price tables and ``CostTracker``."""

from __future__ import annotations

import pytest

from agcore_lab.errors import InvalidInputError
from agcore_lab.llm.usage import DEFAULT_PRICES, CostTracker, ModelPrice, PriceTable, Usage

PRICES = PriceTable(
    {
        "gpt-4o": ModelPrice(prompt=2.5, completion=10.0),
        "gpt-4o-mini": ModelPrice(prompt=0.15, completion=0.6),
        "mine": ModelPrice(prompt=1.0, completion=2.0),
    }
)


def test_usage_adds_field_by_field() -> None:
    total = Usage(prompt_tokens=10, completion_tokens=5, requests=1) + Usage(
        prompt_tokens=3, completion_tokens=2, requests=2
    )
    assert total == Usage(prompt_tokens=13, completion_tokens=7, requests=3)
    assert total.total_tokens == 20
    assert Usage() + Usage() == Usage()
    # A sum is a Usage like any other: it serializes, compares and adds on the same way.
    assert Usage.model_validate_json(total.model_dump_json()) == total
    assert total.model_fields_set == {"prompt_tokens", "completion_tokens", "requests"}
    assert (total + Usage(requests=1)).requests == 4
    with pytest.raises(TypeError):
        total + 1  # type: ignore[operator]


def test_usage_rejects_negative_counts() -> None:
    with pytest.raises(InvalidInputError):
        Usage(prompt_tokens=-1)


def test_cost_is_priced_per_million_tokens() -> None:
    tracker = CostTracker(prices=PRICES)
    cost = tracker.record("mine", Usage(prompt_tokens=1_000_000, completion_tokens=500_000))
    assert cost == pytest.approx(2.0)
    assert tracker.record("mine", Usage(prompt_tokens=500)) == pytest.approx(0.0005)
    assert tracker.total_cost == pytest.approx(2.0005)
    assert tracker.usage == Usage(prompt_tokens=1_000_500, completion_tokens=500_000)


def test_a_dated_model_name_uses_its_longest_listed_prefix() -> None:
    assert PRICES.price_for("gpt-4o-2024-08-06") == PRICES.root["gpt-4o"]
    assert PRICES.price_for("gpt-4o-mini-2024-07-18") == PRICES.root["gpt-4o-mini"]
    usage = Usage(prompt_tokens=1_000_000)
    assert PRICES.cost("gpt-4o-mini-2024-07-18", usage) == pytest.approx(0.15)


def test_an_unknown_model_costs_nothing_but_is_counted() -> None:
    tracker = CostTracker(prices=PRICES)
    assert tracker.record("llama-local", Usage(prompt_tokens=999, completion_tokens=1)) == 0.0
    assert PRICES.price_for("llama-local") is None
    assert tracker.total_cost == 0.0
    assert tracker.by_model["llama-local"].usage.total_tokens == 1000


def test_costs_are_kept_per_model() -> None:
    tracker = CostTracker(prices=PRICES)
    tracker.record("gpt-4o", Usage(prompt_tokens=1_000_000))
    tracker.record("gpt-4o-mini", Usage(completion_tokens=1_000_000))
    tracker.record("gpt-4o", Usage(completion_tokens=100_000))
    assert tracker.by_model["gpt-4o"].cost == pytest.approx(3.5)
    assert tracker.by_model["gpt-4o-mini"].cost == pytest.approx(0.6)
    assert tracker.total_cost == pytest.approx(4.1)


def test_tracker_round_trips_through_json() -> None:
    tracker = CostTracker(prices=PRICES)
    tracker.record("gpt-4o", Usage(prompt_tokens=1234, completion_tokens=567, requests=1))
    tracker.record("unlisted", Usage(prompt_tokens=1))
    again = CostTracker.model_validate_json(tracker.model_dump_json())
    assert again == tracker
    assert again.total_cost == tracker.total_cost
    assert again.usage == tracker.usage
    assert again.prices.price_for("gpt-4o-2024") == ModelPrice(prompt=2.5, completion=10.0)


def test_merge_adds_another_trackers_spend() -> None:
    parent, child = CostTracker(prices=PRICES), CostTracker(prices=PRICES)
    parent.record("mine", Usage(prompt_tokens=1_000_000))
    child.record("mine", Usage(completion_tokens=1_000_000, requests=1))
    parent.merge(child)
    assert parent.total_cost == pytest.approx(3.0)
    assert parent.usage == Usage(prompt_tokens=1_000_000, completion_tokens=1_000_000, requests=1)
    assert child.total_cost == pytest.approx(2.0)  # the child is unchanged


def test_default_prices_are_copied_per_tracker() -> None:
    first, second = CostTracker(), CostTracker()
    first.prices.root["scripted"] = ModelPrice(prompt=1.0, completion=1.0)
    assert second.prices.root["scripted"] == ModelPrice(prompt=0.0, completion=0.0)
    assert DEFAULT_PRICES.root["scripted"] == ModelPrice(prompt=0.0, completion=0.0)

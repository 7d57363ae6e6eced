"""Token usage and cost.

``Usage`` counts tokens of one or more model calls; ``CostTracker`` adds them up per model and
prices them from a :class:`PriceTable` (USD per million tokens). Both are pydantic models, so
they serialize to JSON and back.

Example:
    >>> from agcore_lab.llm.usage import CostTracker, ModelPrice, PriceTable, Usage
    >>> prices = PriceTable({"my-model": ModelPrice(prompt=1.0, completion=2.0)})
    >>> tracker = CostTracker(prices=prices)
    >>> tracker.record("my-model", Usage(prompt_tokens=1_000_000, completion_tokens=500_000))
    2.0
    >>> tracker.total_cost
    2.0
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, RootModel, ValidationError
from pydantic_core import PydanticUndefined

from agcore_lab.checks import CheckedModel, invalid_input
from agcore_lab.errors import InvalidInputError

__all__ = ["DEFAULT_PRICES", "CostTracker", "ModelPrice", "PriceTable", "Usage", "format_cost"]


class Usage(CheckedModel):
    """Tokens used by model calls; add two with ``+``."""

    model_config = ConfigDict(frozen=True)

    prompt_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)
    requests: int = Field(default=0, ge=0)

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        # Sums of two checked usages are checked already: no validation pass (a turn adds
        # usages several times).
        total = Usage.__new__(Usage)
        _fill(
            total,
            {
                "prompt_tokens": self.prompt_tokens + other.prompt_tokens,
                "completion_tokens": self.completion_tokens + other.completion_tokens,
                "requests": self.requests + other.requests,
            },
        )
        return total


_FIELDS = frozenset(("prompt_tokens", "completion_tokens", "requests"))
_set = object.__setattr__


def _fill(usage: Usage, values: dict[str, int]) -> None:
    _set(usage, "__dict__", values)
    _set(usage, "__pydantic_fields_set__", set(_FIELDS))
    _set(usage, "__pydantic_extra__", None)
    _set(usage, "__pydantic_private__", None)


class ModelPrice(CheckedModel):
    """USD per one million tokens."""

    model_config = ConfigDict(frozen=True)

    prompt: float = Field(ge=0)
    completion: float = Field(ge=0)

    def cost(self, usage: Usage) -> float:
        """The cost of ``usage`` at this price."""
        return (usage.prompt_tokens * self.prompt + usage.completion_tokens * self.completion) / 1e6


class PriceTable(RootModel[dict[str, ModelPrice]]):
    """Prices by model name. A model that is not listed costs nothing (and is counted)."""

    root: dict[str, ModelPrice] = Field(default_factory=dict)

    def __init__(self, root: Any = PydanticUndefined, **data: Any) -> None:
        try:
            super().__init__(root, **data)
        except ValidationError as exc:
            raise invalid_input(exc, "PriceTable") from exc

    def price_for(self, model: str) -> ModelPrice | None:
        """The price of ``model``; a dated name such as ``gpt-4o-2024-08-06`` falls back to
        its longest listed prefix (``gpt-4o``)."""
        if model in self.root:
            return self.root[model]
        prefixes = [name for name in self.root if model.startswith(name)]
        return self.root[max(prefixes, key=len)] if prefixes else None

    def cost(self, model: str, usage: Usage) -> float:
        """The cost of ``usage`` on ``model`` (0.0 for an unlisted model)."""
        price = self.price_for(model)
        return price.cost(usage) if price is not None else 0.0


# Published list prices when written (USD per 1M tokens); configure your own for accuracy.
DEFAULT_PRICES = PriceTable(
    {
        "gpt-4o-mini": ModelPrice(prompt=0.15, completion=0.60),
        "gpt-4o": ModelPrice(prompt=2.50, completion=10.00),
        "gpt-4.1-mini": ModelPrice(prompt=0.40, completion=1.60),
        "gpt-4.1": ModelPrice(prompt=2.00, completion=8.00),
        "scripted": ModelPrice(prompt=0.0, completion=0.0),
    }
)


class ModelSpend(BaseModel):
    """Usage and cost of one model inside a :class:`CostTracker`."""

    usage: Usage = Field(default_factory=Usage)
    cost: float = 0.0


class CostTracker(BaseModel):
    """Running usage and cost, per model and in total.

    Not thread-safe by itself: a session updates its tracker under the session's turn lock.
    """

    prices: PriceTable = Field(default_factory=lambda: DEFAULT_PRICES.model_copy(deep=True))
    by_model: dict[str, ModelSpend] = Field(default_factory=dict)

    def fork(self) -> CostTracker:
        """A working copy: the same price table, its own per-model figures (cheap: prices are
        shared, not copied)."""
        return CostTracker.model_construct(
            prices=self.prices,
            by_model={m: ModelSpend(usage=s.usage, cost=s.cost) for m, s in self.by_model.items()},
        )

    def record(self, model: str, usage: Usage) -> float:
        """Add ``usage`` of ``model``; return the cost of this usage.

        Raises:
            InvalidInputError: ``model`` is not a string or ``usage`` not a ``Usage``.
        """
        if not isinstance(model, str) or not isinstance(usage, Usage):
            raise InvalidInputError(
                f"record(model: str, usage: Usage), got {type(model).__name__}, "
                f"{type(usage).__name__}"
            )
        cost = self.prices.cost(model, usage)
        spend = self.by_model.setdefault(model, ModelSpend())
        spend.usage = spend.usage + usage
        spend.cost += cost
        return cost

    @property
    def usage(self) -> Usage:
        """Usage summed over all models."""
        spends = list(self.by_model.values())
        if len(spends) == 1:
            return spends[0].usage  # immutable: the one model's usage is the total
        total = Usage()
        for spend in spends:
            total = total + spend.usage
        return total

    @property
    def total_cost(self) -> float:
        """USD summed over all models."""
        return sum(spend.cost for spend in self.by_model.values())

    def merge(self, other: CostTracker) -> None:
        """Add another tracker's usage and cost into this one (prices of ``other`` applied)."""
        for model, spend in other.by_model.items():
            mine = self.by_model.setdefault(model, ModelSpend())
            mine.usage = mine.usage + spend.usage
            mine.cost += spend.cost


def format_cost(cost: float | None) -> str:
    """Dollars with three significant digits: ``$0.000123``, ``$0.0421``, ``$1.23``
    (``<$0.0001`` below that); ``—`` when nothing was priced (no price is known for the
    model, or nothing ran yet).

    Example:
        >>> format_cost(0.000123456), format_cost(0.04213), format_cost(12.345), format_cost(0)
        ('$0.000123', '$0.0421', '$12.35', '—')
    """
    if cost is None or cost <= 0:
        return "—"
    if cost >= 1:
        return f"${cost:,.2f}"
    return f"${cost:.3g}" if cost >= 0.0001 else "<$0.0001"

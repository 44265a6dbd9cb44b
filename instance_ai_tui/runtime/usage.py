"""Token usage and cost.

``Usage`` counts tokens (including cached prompt tokens and reasoning tokens when the server
reports them) and carries a cost in USD when the model's price is known. Prices are USD per
**million** tokens; ``PriceTable`` holds a small built-in table that the user extends from the
config file (``[model.prices."my-model"] input = 0.2, output = 0.8, cached_input = 0.05``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Usage(BaseModel):
    """Tokens of one or more model calls; ``cost`` is None when no price was known."""

    model_config = ConfigDict(extra="ignore")

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cached_input_tokens: int = 0
    reasoning_tokens: int = 0
    requests: int = 0
    cost: float | None = None

    def __add__(self, other: Usage) -> Usage:
        if self.cost is None and other.cost is None:
            cost = None
        else:
            cost = (self.cost or 0.0) + (other.cost or 0.0)
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            cached_input_tokens=self.cached_input_tokens + other.cached_input_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            requests=self.requests + other.requests,
            cost=cost,
        )

    @property
    def is_empty(self) -> bool:
        return self.requests == 0 and self.total_tokens == 0 and self.input_tokens == 0 and self.output_tokens == 0


class SubAgentUsage(BaseModel):
    """Usage of a sub-agent run, rolled up into its parent's result."""

    agent: str
    run_id: str | None = None
    tool_call_id: str | None = None
    usage: Usage = Field(default_factory=Usage)


class Price(BaseModel):
    """USD per million tokens. ``cached_input`` defaults to ``input`` when absent."""

    model_config = ConfigDict(extra="ignore")

    input: float = 0.0
    output: float = 0.0
    cached_input: float | None = None


#: A few well-known prices (USD / 1M tokens). Extend or override with ``PriceTable.extend``.
DEFAULT_PRICES: dict[str, Price] = {
    "gpt-4o": Price(input=2.5, output=10.0, cached_input=1.25),
    "gpt-4o-mini": Price(input=0.15, output=0.6, cached_input=0.075),
    "gpt-4.1": Price(input=2.0, output=8.0, cached_input=0.5),
    "gpt-4.1-mini": Price(input=0.4, output=1.6, cached_input=0.1),
    "gpt-4.1-nano": Price(input=0.1, output=0.4, cached_input=0.025),
    "o3": Price(input=2.0, output=8.0, cached_input=0.5),
    "o4-mini": Price(input=1.1, output=4.4, cached_input=0.275),
    "gpt-5": Price(input=1.25, output=10.0, cached_input=0.125),
    "gpt-5-mini": Price(input=0.25, output=2.0, cached_input=0.025),
    "gpt-5-nano": Price(input=0.05, output=0.4, cached_input=0.005),
}


def compute_cost(usage: Usage, price: Price) -> float:
    """Cost in USD: uncached prompt at ``input``, cached prompt at ``cached_input``, output at ``output``."""
    cached = min(usage.cached_input_tokens, usage.input_tokens)
    uncached = usage.input_tokens - cached
    cached_rate = price.cached_input if price.cached_input is not None else price.input
    return (uncached * price.input + cached * cached_rate + usage.output_tokens * price.output) / 1_000_000


class PriceTable:
    """Model name -> ``Price``. Lookup tries the exact name, then without a ``provider/`` prefix."""

    def __init__(self, prices: Mapping[str, Price | Mapping[str, float]] | None = None, *, defaults: bool = True):
        self._prices: dict[str, Price] = dict(DEFAULT_PRICES) if defaults else {}
        if prices:
            self.extend(prices)

    def extend(self, prices: Mapping[str, Price | Mapping[str, Any]]) -> None:
        for name, price in prices.items():
            self._prices[name] = price if isinstance(price, Price) else Price.model_validate(dict(price))

    def get(self, model: str) -> Price | None:
        if model in self._prices:
            return self._prices[model]
        if "/" in model:
            return self._prices.get(model.rsplit("/", 1)[1])
        return None

    def priced(self, model: str, usage: Usage) -> Usage:
        """``usage`` with ``cost`` filled in when the model's price is known."""
        price = self.get(model)
        if price is None:
            return usage
        return usage.model_copy(update={"cost": compute_cost(usage, price)})

    def __contains__(self, model: str) -> bool:
        return self.get(model) is not None

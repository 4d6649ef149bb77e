"""What tokens cost on the hosted APIs: a small table, for /cost and --max-budget.

Prices are US dollars per million tokens, as the providers' public price pages listed them
for standard (not batch) requests in 2025-11: https://openai.com/api/pricing,
https://www.anthropic.com/pricing (the API table) and https://ai.google.dev/gemini-api/docs/pricing
(Gemini 2.5 Pro: the tier for prompts up to 200k tokens). They change: the estimate is only as
current as this table, and a model not in it has no price (never a guess).

A usage's input tokens include the cached ones (each provider reports them so); cached input
is billed at its own rate. Anthropic's cache writes cost 1.25 times the input price and are
counted here as plain input, so an estimate for Claude can be a little low.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..core.messages import Usage

PRICES_DATE = "2025-11"
HOSTED = ("openai", "anthropic", "gemini")
"""The providers whose models the table prices; a local server (ollama, or an OpenAI-compatible
one behind the openai provider with a model name of its own) is not priced."""


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens."""

    input: float
    cached: float
    output: float

    def cost(self, usage: Usage) -> float:
        cached = min(usage.cached_tokens, usage.input_tokens)
        fresh = usage.input_tokens - cached
        return (fresh * self.input + cached * self.cached + usage.output_tokens * self.output) / 1e6


PRICES: dict[str, Price] = {
    # OpenAI
    "gpt-5": Price(1.25, 0.125, 10.0),
    "gpt-5-mini": Price(0.25, 0.025, 2.0),
    "gpt-5-nano": Price(0.05, 0.005, 0.40),
    "gpt-4.1": Price(2.0, 0.50, 8.0),
    "gpt-4.1-mini": Price(0.40, 0.10, 1.60),
    "gpt-4.1-nano": Price(0.10, 0.025, 0.40),
    "gpt-4o": Price(2.50, 1.25, 10.0),
    "gpt-4o-mini": Price(0.15, 0.075, 0.60),
    "o3": Price(2.0, 0.50, 8.0),
    "o3-mini": Price(1.10, 0.55, 4.40),
    "o4-mini": Price(1.10, 0.275, 4.40),
    # Anthropic (cached: a cache read)
    "claude-opus-4-5": Price(5.0, 0.50, 25.0),
    "claude-opus-4-1": Price(15.0, 1.50, 75.0),
    "claude-opus-4": Price(15.0, 1.50, 75.0),
    "claude-sonnet-4-5": Price(3.0, 0.30, 15.0),
    "claude-sonnet-4": Price(3.0, 0.30, 15.0),
    "claude-3-7-sonnet": Price(3.0, 0.30, 15.0),
    "claude-haiku-4-5": Price(1.0, 0.10, 5.0),
    "claude-3-5-haiku": Price(0.80, 0.08, 4.0),
    # Google
    "gemini-2.5-pro": Price(1.25, 0.31, 10.0),
    "gemini-2.5-flash": Price(0.30, 0.075, 2.50),
    "gemini-2.5-flash-lite": Price(0.10, 0.025, 0.40),
    "gemini-2.0-flash": Price(0.10, 0.025, 0.40),
}
"""By model name; a dated or tagged name (`gpt-4o-2024-08-06`, `claude-sonnet-4-20250514`) takes
the price of the longest entry it starts with, followed by `-` (or `@`, `:`)."""


def price_of(provider: str, model: str) -> Price | None:
    """The table's price for `model` on a hosted provider; None when it has none."""
    if provider not in HOSTED:
        return None
    name = model.strip().lower()
    found = [key for key in PRICES if name == key or
             (name.startswith(key) and name[len(key)] in "-@:")]
    return PRICES[max(found, key=len)] if found else None


def estimated_cost(provider: str, model: str, usage: Usage) -> float | None:
    """US dollars for `usage` at the table's price, None for a model it does not price."""
    price = price_of(provider, model)
    return price.cost(usage) if price is not None else None


def dollars(amount: float) -> str:
    """$0.0042 for small amounts, $1.23 for larger ones."""
    return f"${amount:.4f}" if amount < 1 else f"${amount:,.2f}"


class RunBudget:
    """--max-budget: the tokens a run spends, priced as they come; `on_passed` is called once,
    when the estimate first goes past the limit (the caller stops the run)."""

    def __init__(self, limit: float, price: Price, model: str, on_passed: Callable[[], None]) -> None:
        self.limit = limit
        self.price = price
        self.model = model
        self.on_passed = on_passed
        self.spent = Usage()
        self.passed = False

    def count(self, usage: Usage) -> None:
        self.spent = self.spent + usage
        if not self.passed and self.cost > self.limit:
            self.passed = True
            self.on_passed()

    @property
    def cost(self) -> float:
        return self.price.cost(self.spent)

    def message(self) -> str:
        return (f"stopped: the estimated cost {dollars(self.cost)} ({self.model} at the prices of "
                f"{PRICES_DATE}) passed --max-budget {dollars(self.limit)}")

from dataclasses import dataclass
from datetime import date


@dataclass
class Coupon:
    code: str
    percent: int
    valid_until: date


@dataclass
class Item:
    sku: str
    price_cents: int

from dataclasses import dataclass, field


@dataclass
class Cart:
    lines: list = field(default_factory=list)

    def add(self, name, price_cents, qty=1):
        self.lines.append((name, price_cents, qty))


def compute_order_total(cart, discount_percent=0):
    """Sum of all lines in cents, after the discount."""
    gross = sum(price * qty for _, price, qty in cart.lines)
    return gross - gross * discount_percent // 100

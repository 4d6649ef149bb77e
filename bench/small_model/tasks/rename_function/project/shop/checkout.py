from .cart import Cart, calc_total


def receipt(cart: Cart, discount_percent=0) -> str:
    lines = [f"{qty} x {name}" for name, _, qty in cart.lines]
    total = calc_total(cart, discount_percent)
    lines.append(f"total: {total / 100:.2f}")
    return "\n".join(lines)

from ..models import Coupon, Item
from ..util.dates import today


def coupon_is_expired(coupon: Coupon, on=None) -> bool:
    return (on or today()) > coupon.valid_until


def apply_coupon(items: list[Item], coupon: Coupon) -> int:
    total = sum(i.price_cents for i in items)
    if coupon_is_expired(coupon):
        return total
    return total - total * coupon.percent // 100

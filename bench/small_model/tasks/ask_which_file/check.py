"""The answer must name shop/pricing/discounts.py, where coupon_is_expired lives."""

from checklib import passed, require_answer_has

require_answer_has(r"(?<![\w/])(shop/)?pricing/discounts\.py\b", "shop/pricing/discounts.py")
passed()

VAT_PERCENT = 19


def with_vat(cents: int) -> int:
    return cents + cents * VAT_PERCENT // 100

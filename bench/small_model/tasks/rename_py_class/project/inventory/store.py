from .models import StockItem


class Store:
    def __init__(self) -> None:
        self.items: dict[str, StockItem] = {}

    def add(self, sku: str, name: str, quantity: int = 0) -> StockItem:
        item = StockItem(sku, name, quantity)
        self.items[sku] = item
        return item

    def low_stock(self) -> list[StockItem]:
        return [item for item in self.items.values() if item.is_low()]

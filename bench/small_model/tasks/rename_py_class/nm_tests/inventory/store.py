from .models import Product


class Store:
    def __init__(self) -> None:
        self.items: dict[str, Product] = {}

    def add(self, sku: str, name: str, quantity: int = 0) -> Product:
        item = Product(sku, name, quantity)
        self.items[sku] = item
        return item

    def low_stock(self) -> list[Product]:
        return [item for item in self.items.values() if item.is_low()]

"""Prints the items that are running low."""

from inventory.models import StockItem
from inventory.store import Store


def describe(item: StockItem) -> str:
    return f"{item.sku} {item.name}: {item.quantity} left"


store = Store()
store.add("A1", "bolts", 120)
store.add("B7", "hinges", 3)
store.add("C2", "washers", 1)
for item in store.low_stock():
    print(describe(item))

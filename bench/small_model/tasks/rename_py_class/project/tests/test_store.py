from inventory.models import StockItem
from inventory.store import Store


def test_add_returns_the_item():
    item = Store().add("X9", "nails", 2)
    assert isinstance(item, StockItem)
    assert item.quantity == 2


def test_low_stock():
    store = Store()
    store.add("A", "a", 10)
    store.add("B", "b", 1)
    assert [item.sku for item in store.low_stock()] == ["B"]

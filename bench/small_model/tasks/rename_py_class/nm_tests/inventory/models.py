from dataclasses import dataclass


@dataclass
class Product:
    sku: str
    name: str
    quantity: int = 0

    def is_low(self, threshold: int = 5) -> bool:
        return self.quantity < threshold

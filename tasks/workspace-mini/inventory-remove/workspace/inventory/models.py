"""What the store holds."""
from dataclasses import dataclass


@dataclass
class Item:
    name: str
    price: float
    quantity: int = 0

"""A store of items, by name."""
from .models import Item


class Store:
    def __init__(self):
        self.items = {}

    def add(self, name, price, quantity=1):
        item = self.items.setdefault(name, Item(name, price))
        item.quantity += quantity

    def remove(self, name, quantity=1):
        item = self.items.get(name)
        if item is None or item.quantity < quantity:
            raise KeyError(name)
        item.quantity -= quantity
        if item.quantity == 0:
            del self.items[name]

    def total_value(self):
        return sum(item.price * item.quantity for item in self.items.values())

class Catalog:
    """Item prices in cents; listeners are told whenever a price may have changed."""

    def __init__(self):
        self._prices = {}
        self._listeners = []

    def on_change(self, listener):
        self._listeners.append(listener)

    def _changed(self, sku):
        for listener in self._listeners:
            listener(sku)

    def add_item(self, sku, cents):
        if sku in self._prices:
            raise KeyError(f"{sku} is already in the catalog")
        self._prices[sku] = cents
        self._changed(sku)

    def set_price(self, sku, cents):
        if sku not in self._prices:
            raise KeyError(sku)
        self._prices[sku] = cents
        self._changed(sku)

    def remove_item(self, sku):
        del self._prices[sku]
        self._changed(sku)

    def price(self, sku):
        return self._prices[sku]

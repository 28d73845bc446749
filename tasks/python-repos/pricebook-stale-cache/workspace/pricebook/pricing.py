from . import discounts


class PriceCalculator:
    """Final prices with the customer's discount, memoised until the catalog changes that item."""

    def __init__(self, catalog, percent_off=0):
        self._catalog = catalog
        self._percent = percent_off
        self._cache = {}
        self.computed = 0
        catalog.on_change(self._forget)

    def _forget(self, sku):
        self._cache.pop(sku, None)

    def final_price(self, sku):
        if sku not in self._cache:
            self.computed += 1
            self._cache[sku] = discounts.apply(self._catalog.price(sku), self._percent)
        return self._cache[sku]

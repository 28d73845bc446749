from pricebook import Catalog, PriceCalculator


def test_discount_and_memo():
    catalog = Catalog()
    catalog.add_item("pen", 199)
    calc = PriceCalculator(catalog, percent_off=10)
    assert calc.final_price("pen") == 179
    assert calc.final_price("pen") == 179
    assert calc.computed == 1


def test_removed_item_is_forgotten():
    catalog = Catalog()
    catalog.add_item("pen", 100)
    calc = PriceCalculator(catalog)
    calc.final_price("pen")
    catalog.remove_item("pen")
    catalog.add_item("pen", 300)
    assert calc.final_price("pen") == 300

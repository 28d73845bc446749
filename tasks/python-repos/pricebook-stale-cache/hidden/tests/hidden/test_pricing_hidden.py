import pytest

from pricebook import Catalog, PriceCalculator


def test_price_change_reaches_calculator():
    catalog = Catalog()
    catalog.add_item("pen", 200)
    calc = PriceCalculator(catalog, percent_off=50)
    assert calc.final_price("pen") == 100
    catalog.set_price("pen", 400)
    assert calc.final_price("pen") == 200


def test_other_items_stay_cached():
    catalog = Catalog()
    catalog.add_item("pen", 200)
    catalog.add_item("ink", 500)
    calc = PriceCalculator(catalog)
    calc.final_price("pen")
    calc.final_price("ink")
    catalog.set_price("pen", 250)
    calc.final_price("ink")
    assert calc.final_price("pen") == 250
    assert calc.computed == 3


def test_unknown_item():
    with pytest.raises(KeyError):
        Catalog().set_price("nope", 1)

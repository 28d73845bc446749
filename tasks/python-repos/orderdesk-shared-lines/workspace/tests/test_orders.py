import pytest

from orderdesk import add_line, new_order, order_total


def test_overrides():
    order = new_order(customer="ada", currency="GBP")
    assert (order.customer, order.currency) == ("ada", "GBP")


def test_quantity_must_be_positive():
    with pytest.raises(ValueError):
        add_line(new_order(lines=[]), "x", 0, 100)


def test_total_with_own_lines():
    order = add_line(new_order(lines=[]), "pen", 3, 150)
    assert order_total(order) == 450

from orderdesk import add_line, new_order, order_total
from orderdesk.orders import DEFAULT_ORDER


def test_orders_do_not_share_lines():
    first = add_line(new_order(customer="a"), "pen", 1, 100)
    second = new_order(customer="b")
    assert second.lines == []
    assert order_total(first) == 100


def test_template_stays_empty():
    add_line(new_order(), "ink", 2, 300)
    assert DEFAULT_ORDER.lines == []


def test_total_of_two_orders():
    a = add_line(new_order(), "pen", 2, 100)
    b = add_line(new_order(), "pad", 1, 250)
    assert (order_total(a), order_total(b)) == (200, 250)


def test_given_lines_are_kept():
    order = new_order(lines=[])
    assert order.lines == []

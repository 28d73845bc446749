import pytest

from orderflow import advance, dump, load
from orderflow.states import Status
from orderflow.storage import new_order
from orderflow.transitions import IllegalTransition


def test_loaded_order_can_advance():
    order = load(dump(new_order(7)))
    assert advance(order, "paid")["status"] is Status.PAID


def test_round_trip_keeps_status():
    order = load(dump(advance(new_order(3), "paid")))
    assert order["status"] is Status.PAID
    assert order["history"] == ["paid"]


def test_loaded_order_still_refuses_illegal_moves():
    with pytest.raises(IllegalTransition):
        advance(load(dump(new_order(1))), "shipped")

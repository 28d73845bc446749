import pytest

from orderflow import advance
from orderflow.storage import new_order
from orderflow.transitions import IllegalTransition


def test_happy_path_in_memory():
    order = advance(advance(new_order(1), "paid"), "shipped")
    assert order["history"] == ["paid", "shipped"]


def test_illegal():
    with pytest.raises(IllegalTransition):
        advance(new_order(1), "shipped")

import pytest

from splitbill import settle
from splitbill.money import cents, show


def test_even_split():
    assert settle("30.00", ["a", "b", "c"]) == {"a": "10.00", "b": "10.00", "c": "10.00"}


def test_money():
    assert cents("12.3") == 1230 and show(5) == "0.05"


def test_nobody():
    with pytest.raises(ValueError):
        settle("1.00", [])

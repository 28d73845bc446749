from pkgpick import latest, satisfying
from pkgpick.version import parse


def test_two_digit_parts_order_numerically():
    assert latest(["1.9.0", "1.10.0", "1.2.0"]) == "1.10.0"
    assert parse("1.10") > parse("1.9.9")


def test_constraints_with_two_digit_parts():
    assert satisfying(["0.9", "0.10", "0.11", "1.0"], ">=0.10,<1") == ["0.10", "0.11"]


def test_missing_parts_are_zero():
    assert parse("2") == parse("2.0.0")

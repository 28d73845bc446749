from splitbill import settle
from splitbill.money import cents
from splitbill.shares import split_evenly


def test_shares_add_up():
    for total in range(0, 400, 7):
        for people in range(1, 8):
            shares = split_evenly(total, people)
            assert sum(shares) == total
            assert max(shares) - min(shares) <= 1


def test_first_names_pay_the_extra_cents():
    assert settle("10.00", ["a", "b", "c"]) == {"a": "3.34", "b": "3.33", "c": "3.33"}


def test_total_kept():
    paid = settle("0.05", ["a", "b"])
    assert sum(cents(v) for v in paid.values()) == 5

from spans import Interval, merge


def test_overlapping():
    assert merge([Interval(1, 4), Interval(2, 6)]) == [Interval(1, 6)]


def test_disjoint():
    assert merge([Interval(5, 6), Interval(1, 2)]) == [Interval(1, 2), Interval(5, 6)]

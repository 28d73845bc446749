from spans import Interval, merge


def test_touching_intervals_merge():
    assert merge([Interval(1, 3), Interval(3, 5)]) == [Interval(1, 5)]


def test_chain():
    assert merge([Interval(0, 1), Interval(1, 2), Interval(2, 3)]) == [Interval(0, 3)]


def test_nested():
    assert merge([Interval(1, 10), Interval(2, 3)]) == [Interval(1, 10)]

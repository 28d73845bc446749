from spans import Interval, merge


def pairs(intervals):
    """Plain (start, end) tuples: the verifier's strict assertions compare data, never the agent's classes."""
    return [(interval.start, interval.end) for interval in intervals]


def test_touching_intervals_merge():
    assert pairs(merge([Interval(1, 3), Interval(3, 5)])) == [(1, 5)]


def test_chain():
    assert pairs(merge([Interval(0, 1), Interval(1, 2), Interval(2, 3)])) == [(0, 3)]


def test_nested():
    assert pairs(merge([Interval(1, 10), Interval(2, 3)])) == [(1, 10)]

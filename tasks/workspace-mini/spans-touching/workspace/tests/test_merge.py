from spans import Interval, merge


def pairs(intervals):
    """Plain (start, end) tuples: the verifier's strict assertions compare data, never the agent's classes."""
    return [(interval.start, interval.end) for interval in intervals]


def test_overlapping():
    assert pairs(merge([Interval(1, 4), Interval(2, 6)])) == [(1, 6)]


def test_disjoint():
    assert pairs(merge([Interval(5, 6), Interval(1, 2)])) == [(1, 2), (5, 6)]

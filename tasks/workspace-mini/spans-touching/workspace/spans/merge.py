"""Merging overlapping intervals."""
from .interval import Interval


def merge(intervals):
    merged = []
    for current in sorted(intervals):
        if merged and current.start < merged[-1].end:
            last = merged.pop()
            merged.append(Interval(last.start, max(last.end, current.end)))
        else:
            merged.append(current)
    return merged

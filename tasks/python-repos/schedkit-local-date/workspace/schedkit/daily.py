from datetime import datetime, time, timedelta

from .clock import day_of, require_aware


def next_run(after, at, tz):
    """The first moment strictly after `after` at which a local wall clock in `tz` shows `at` (a time)."""
    require_aware(after)
    day = day_of(after)
    candidate = datetime.combine(day, at, tzinfo=tz)
    while candidate <= after:
        day += timedelta(days=1)
        candidate = datetime.combine(day, at, tzinfo=tz)
    return candidate


def runs_between(start, end, at, tz):
    moments = []
    current = next_run(start - timedelta(microseconds=1), at, tz)
    while current < end:
        moments.append(current)
        current = next_run(current, at, tz)
    return moments


__all__ = ["next_run", "runs_between", "time"]

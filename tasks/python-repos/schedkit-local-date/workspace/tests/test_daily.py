from datetime import datetime, time

import pytest

from schedkit import next_run, zone
from schedkit.daily import runs_between


def test_utc_same_day_and_next_day():
    utc = zone("UTC")
    assert next_run(datetime(2024, 3, 1, 8, 0, tzinfo=utc), time(9, 0), utc) == datetime(2024, 3, 1, 9, 0, tzinfo=utc)
    assert next_run(datetime(2024, 3, 1, 10, 0, tzinfo=utc), time(9, 0), utc) == datetime(2024, 3, 2, 9, 0, tzinfo=utc)


def test_naive_refused():
    with pytest.raises(ValueError):
        next_run(datetime(2024, 3, 1), time(9), zone("UTC"))


def test_three_runs_in_utc():
    utc = zone("UTC")
    runs = runs_between(datetime(2024, 1, 1, tzinfo=utc), datetime(2024, 1, 4, tzinfo=utc), time(6), utc)
    assert [r.day for r in runs] == [1, 2, 3]

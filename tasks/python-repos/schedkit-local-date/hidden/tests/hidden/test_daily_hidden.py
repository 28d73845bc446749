from datetime import datetime, time

from schedkit import next_run, zone


def test_tokyo_morning_is_still_yesterday_in_utc():
    tokyo = zone("TOKYO")
    after = datetime(2024, 3, 2, 7, 0, tzinfo=tokyo)  # 2024-03-01 22:00 UTC
    assert next_run(after, time(8, 0), tokyo) == datetime(2024, 3, 2, 8, 0, tzinfo=tokyo)


def test_new_york_evening_is_already_tomorrow_in_utc():
    nyc = zone("NYC-STD")
    after = datetime(2024, 3, 1, 21, 0, tzinfo=nyc)  # 2024-03-02 02:00 UTC
    assert next_run(after, time(22, 0), nyc) == datetime(2024, 3, 1, 22, 0, tzinfo=nyc)


def test_after_given_in_another_zone():
    berlin = zone("BERLIN-STD")
    after = datetime(2024, 3, 1, 23, 30, tzinfo=zone("UTC"))  # 00:30 on 2 March in Berlin
    assert next_run(after, time(0, 15), berlin) == datetime(2024, 3, 3, 0, 15, tzinfo=berlin)


def test_utc_unchanged():
    utc = zone("UTC")
    assert next_run(datetime(2024, 2, 28, 23, 59, tzinfo=utc), time(0, 0), utc) == datetime(2024, 2, 29, 0, 0, tzinfo=utc)

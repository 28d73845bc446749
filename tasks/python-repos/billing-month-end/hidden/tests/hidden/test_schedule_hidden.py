from datetime import date

from billing import renewal_dates
from billing.months import add_months


def test_end_of_month_clamps():
    assert add_months(date(2024, 1, 31), 1) == date(2024, 2, 29)
    assert add_months(date(2023, 1, 31), 1) == date(2023, 2, 28)
    assert add_months(date(2024, 3, 31), -1) == date(2024, 2, 29)


def test_renewals_counted_from_start_keep_the_day():
    assert renewal_dates(date(2024, 1, 31), "monthly", 3) == [date(2024, 2, 29), date(2024, 3, 31), date(2024, 4, 30)]


def test_quarterly_and_yearly():
    assert renewal_dates(date(2023, 11, 30), "quarterly", 1) == [date(2024, 2, 29)]
    assert renewal_dates(date(2024, 2, 29), "yearly", 1) == [date(2025, 2, 28)]


def test_plain_day():
    assert add_months(date(2024, 5, 5), 12) == date(2025, 5, 5)

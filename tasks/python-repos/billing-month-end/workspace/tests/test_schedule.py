from datetime import date

import pytest

from billing import renewal_dates
from billing.months import add_months


def test_monthly_mid_month():
    assert renewal_dates(date(2024, 11, 15), "monthly", 3) == [date(2024, 12, 15), date(2025, 1, 15), date(2025, 2, 15)]


def test_backwards():
    assert add_months(date(2024, 1, 10), -1) == date(2023, 12, 10)


def test_unknown_plan():
    with pytest.raises(ValueError):
        renewal_dates(date(2024, 1, 1), "weekly", 1)

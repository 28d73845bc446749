import calendar
from datetime import date


def add_months(day, months):
    """The same day of the month `months` later (or earlier), or that month's last day when it is shorter."""
    index = day.year * 12 + day.month - 1 + months
    year, month = divmod(index, 12)
    last = calendar.monthrange(year, month + 1)[1]
    return date(year, month + 1, min(day.day, last))

from datetime import date


def add_months(day, months):
    """The same day of the month `months` later (or earlier)."""
    index = day.year * 12 + day.month - 1 + months
    year, month = divmod(index, 12)
    return date(year, month + 1, day.day)

from .combine import merge_totals
from .entries import totals_by_account


def monthly_report(months):
    """For {month: entries}: each month's totals and the running year-to-date totals after it."""
    report = {}
    year_to_date = {}
    for month in sorted(months):
        totals = totals_by_account(months[month])
        year_to_date = merge_totals(totals, year_to_date)
        report[month] = {"month": totals, "ytd": year_to_date}
    return report

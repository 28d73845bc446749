"""Totals per category."""
from .parse import parse_lines


def totals_by_category(text):
    totals = {}
    for category, amount in parse_lines(text):
        totals[category] = totals.get(category, 0.0) + amount
    return dict(sorted(totals.items()))

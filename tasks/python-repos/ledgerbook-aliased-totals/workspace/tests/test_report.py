from ledgerbook import monthly_report
from ledgerbook.combine import merge_totals


def test_one_month():
    report = monthly_report({"2024-01": [("cash", 100), ("cash", -30), ("bank", 5)]})
    assert report["2024-01"]["month"] == {"cash": 70, "bank": 5}
    assert report["2024-01"]["ytd"] == {"cash": 70, "bank": 5}


def test_merge_sums():
    assert merge_totals({"a": 1}, {"a": 2, "b": 3}) == {"a": 3, "b": 3}

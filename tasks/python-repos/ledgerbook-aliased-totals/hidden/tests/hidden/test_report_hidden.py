from ledgerbook import monthly_report
from ledgerbook.combine import merge_totals


def test_month_totals_not_changed_by_ytd():
    report = monthly_report({"2024-01": [("cash", 100)], "2024-02": [("cash", 50), ("bank", 7)]})
    assert report["2024-01"] == {"month": {"cash": 100}, "ytd": {"cash": 100}}
    assert report["2024-02"]["month"] == {"cash": 50, "bank": 7}
    assert report["2024-02"]["ytd"] == {"cash": 150, "bank": 7}


def test_merge_leaves_inputs_alone():
    first, second = {"a": 1}, {"a": 2}
    assert merge_totals(first, second) == {"a": 3}
    assert first == {"a": 1} and second == {"a": 2}


def test_three_months_running():
    report = monthly_report({"m1": [("x", 1)], "m2": [("x", 2)], "m3": [("x", 3)]})
    assert [report[m]["ytd"]["x"] for m in ("m1", "m2", "m3")] == [1, 3, 6]

from recordstats import summarize_text
from recordstats.stats import summarize


def test_list_input():
    assert summarize([("a", 1.0), ("b", 3.0)]) == {"count": 2, "total": 4.0, "mean": 2.0, "largest": "b"}


def test_empty_text():
    assert summarize_text("") == {"count": 0, "total": 0, "mean": 0.0, "largest": None}

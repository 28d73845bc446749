from recordstats import summarize_text
from recordstats.stats import summarize


def test_text_summary():
    assert summarize_text("a: 1\nb: 5\n\nc: 3\n") == {"count": 3, "total": 9.0, "mean": 3.0, "largest": "b"}


def test_any_iterable():
    assert summarize(iter([("x", 2.0)]))["total"] == 2.0


def test_single_record():
    assert summarize_text("only: 4")["mean"] == 4.0

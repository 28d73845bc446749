from ledger import parse_lines, totals_by_category


def test_last_line_without_newline():
    assert parse_lines("rent,10\nfood,2") == [("rent", 10.0), ("food", 2.0)]


def test_single_line():
    assert totals_by_category("rent,7") == {"rent": 7.0}


def test_trailing_newline():
    assert totals_by_category("a,1\nb,2\n") == {"a": 1.0, "b": 2.0}

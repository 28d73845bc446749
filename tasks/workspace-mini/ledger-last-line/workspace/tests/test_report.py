from ledger import totals_by_category


def test_comments_and_blank_lines_are_skipped():
    text = "# header\nfood,2\n\nfood,3\n# end\n"
    assert totals_by_category(text) == {"food": 5.0}

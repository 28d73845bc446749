from textspan import excerpt, line_and_column

TEXT = "alpha\nbeta\ngamma\n"


def test_first_character_of_lines():
    assert line_and_column(TEXT, 0) == (1, 1)
    assert line_and_column(TEXT, 6) == (2, 1)


def test_excerpt_middle():
    assert excerpt(TEXT, 7) == ["  1 | alpha", "> 2 | beta", "  3 | gamma"]

import pytest

from textspan import excerpt, line_and_column

TEXT = "alpha\nbeta\ngamma\n"


def test_newline_belongs_to_the_line_it_ends():
    assert line_and_column(TEXT, 5) == (1, 6)
    assert line_and_column(TEXT, 10) == (2, 5)


def test_excerpt_at_end_of_first_line():
    assert excerpt(TEXT, 5, context=0) == ["> 1 | alpha"]


def test_end_of_text():
    assert line_and_column("ab", 2) == (1, 3)


def test_outside():
    with pytest.raises(IndexError):
        line_and_column(TEXT, 99)

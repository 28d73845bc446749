import pytest

from wraptext import wrap


def test_line_may_fill_the_width():
    assert wrap("aaa bbb ccc", 7) == ["aaa bbb", "ccc"]


def test_exact_fit():
    assert wrap("ab cd", 5) == ["ab cd"]


def test_bad_width():
    with pytest.raises(ValueError):
        wrap("x", 0)


def test_long_word_stays_whole():
    assert wrap("abcdefgh ij", 4) == ["abcdefgh", "ij"]

import pytest

from statkit import mean, median, stdev


def test_median_even():
    assert median([4, 1, 3, 2]) == 2.5


def test_median_even_pair():
    assert median([10, 20]) == 15


def test_median_empty():
    with pytest.raises(ValueError):
        median([])


def test_stdev():
    assert stdev([2, 4, 4, 4, 5, 5, 7, 9]) == 2.0

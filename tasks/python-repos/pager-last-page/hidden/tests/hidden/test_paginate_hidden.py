import pytest

from pager import paginate
from pager.counts import total_pages


def test_partial_last_page_is_reachable():
    result = paginate(list(range(25)), page=3, per_page=10)
    assert result["items"] == [20, 21, 22, 23, 24]
    assert result["has_next"] is False


def test_has_next_before_partial_page():
    assert paginate(list(range(11)), page=1, per_page=10)["has_next"] is True


def test_total_pages():
    assert [total_pages(n, 10) for n in (0, 1, 10, 11, 20, 21)] == [1, 1, 1, 2, 2, 3]


def test_past_the_end():
    with pytest.raises(IndexError):
        paginate(list(range(20)), page=3, per_page=10)

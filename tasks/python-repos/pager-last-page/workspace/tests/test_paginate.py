import pytest

from pager import paginate


def test_full_pages():
    result = paginate(list(range(20)), page=2, per_page=10)
    assert result["items"] == list(range(10, 20))
    assert (result["pages"], result["has_next"], result["has_prev"]) == (2, False, True)


def test_empty_listing():
    assert paginate([], page=1)["items"] == []


def test_bad_page():
    with pytest.raises(ValueError):
        paginate([1], page=0)

import pytest

from tinycsv import read_records


def test_plain_and_quoted():
    assert read_records('name,city\nada,"London, UK"\n') == [{"name": "ada", "city": "London, UK"}]


def test_width_checked():
    with pytest.raises(ValueError, match="row 2"):
        read_records("a,b\n1\n")


def test_other_delimiter():
    assert read_records("a;b\n1;2\n", delimiter=";") == [{"a": "1", "b": "2"}]

import pytest

from tinycsv import read_records
from tinycsv.lexer import split_fields


def test_doubled_quote_is_a_literal_quote():
    assert split_fields('1,"say ""hi""",x') == ["1", 'say "hi"', "x"]


def test_field_that_is_only_a_quote():
    assert split_fields('""""') == ['"']


def test_record_with_escaped_quotes_and_comma():
    rows = read_records('id,title\n7,"The ""Big"" One, revised"\n')
    assert rows == [{"id": "7", "title": 'The "Big" One, revised'}]


def test_empty_quoted_field():
    assert split_fields('a,"",b') == ["a", "", "b"]


def test_unterminated():
    with pytest.raises(ValueError):
        split_fields('a,"b')

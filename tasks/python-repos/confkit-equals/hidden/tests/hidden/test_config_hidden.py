import pytest

from confkit import load


def test_value_holding_equals_sign():
    config = load("[db]\nurl = postgres://h/db?sslmode=require&x=1\n")
    assert config.get("db.url") == "postgres://h/db?sslmode=require&x=1"


def test_empty_value_after_equals():
    assert load("token = a=\n").get("token") == "a="


def test_line_without_equals_is_an_error():
    with pytest.raises(ValueError, match="line 2"):
        load("a = 1\nbroken\n")


def test_comment_lines_skipped():
    assert load("# x = 1\ny = 2\n").get("x") is None

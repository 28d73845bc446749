import pytest

from pkgpick import latest, satisfying


def test_single_digit_versions():
    assert latest(["1.2.0", "1.3.1", "1.3.0"]) == "1.3.1"
    assert satisfying(["1.0", "2.0", "3.0"], ">=2") == ["2.0", "3.0"]


def test_nothing_matches():
    with pytest.raises(LookupError):
        latest(["1.0"], ">2")


def test_bad_version():
    with pytest.raises(ValueError):
        latest(["one"])

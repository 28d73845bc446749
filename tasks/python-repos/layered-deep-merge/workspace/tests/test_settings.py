from layered import resolve
from layered.defaults import DEFAULTS


def test_no_layers():
    assert resolve() == DEFAULTS


def test_top_level_override():
    assert resolve({"workers": 8})["workers"] == 8

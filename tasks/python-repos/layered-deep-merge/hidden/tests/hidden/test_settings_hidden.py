import copy

from layered import resolve
from layered.defaults import DEFAULTS
from layered.merge import deep_merge


def test_nested_override_keeps_siblings():
    settings = resolve({"server": {"port": 9000}})
    assert settings["server"] == {"host": "127.0.0.1", "port": 9000, "tls": {"enabled": False, "cert": None}}


def test_three_levels_and_layers_in_order():
    settings = resolve({"server": {"tls": {"enabled": True}}}, {"server": {"tls": {"cert": "a.pem"}}, "log": {"level": "debug"}})
    assert settings["server"]["tls"] == {"enabled": True, "cert": "a.pem"}
    assert settings["log"] == {"level": "debug", "format": "text"}


def test_inputs_unchanged():
    before = copy.deepcopy(DEFAULTS)
    override = {"server": {"tls": {"enabled": True}}}
    deep_merge(DEFAULTS, override)
    assert DEFAULTS == before and override == {"server": {"tls": {"enabled": True}}}


def test_dict_replaces_scalar():
    assert deep_merge({"a": 1}, {"a": {"b": 2}}) == {"a": {"b": 2}}

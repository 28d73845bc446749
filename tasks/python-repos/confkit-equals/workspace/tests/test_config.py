from confkit import load

TEXT = """
# service settings
name = billing
[server]
port = 0x1F90
debug = off
hosts = a.example, b.example
"""


def test_sections_and_types():
    config = load(TEXT)
    assert config.get("name") == "billing"
    assert config.get_int("server.port") == 8080
    assert config.get_bool("server.debug") is False
    assert config.get_list("server.hosts") == ["a.example", "b.example"]


def test_defaults():
    config = load("")
    assert config.get("missing", "x") == "x"
    assert config.get_bool("missing", True) is True

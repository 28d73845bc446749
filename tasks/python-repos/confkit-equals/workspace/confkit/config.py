from . import types
from .parser import parse


class Config:
    def __init__(self, values):
        self._values = dict(values)

    def get(self, key, default=None):
        return self._values.get(key, default)

    def get_bool(self, key, default=False):
        return types.to_bool(self._values[key]) if key in self._values else default

    def get_int(self, key, default=0):
        return types.to_int(self._values[key]) if key in self._values else default

    def get_list(self, key):
        return types.to_list(self._values.get(key, ""))


def load(text):
    return Config(parse(text))

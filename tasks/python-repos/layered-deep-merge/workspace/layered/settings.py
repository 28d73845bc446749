from .defaults import DEFAULTS
from .merge import deep_merge


def resolve(*layers):
    """The defaults with each layer (file, environment, flags) laid over in turn."""
    settings = DEFAULTS
    for layer in layers:
        settings = deep_merge(settings, layer)
    return settings

from .cache import memoize
from .geo import distance

__all__ = ["distance", "memoize"]

from .central import mean, median
from .spread import variance, stdev

__all__ = ["mean", "median", "variance", "stdev"]

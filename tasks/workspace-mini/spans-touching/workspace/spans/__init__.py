from .interval import Interval
from .merge import merge

__all__ = ["Interval", "merge"]

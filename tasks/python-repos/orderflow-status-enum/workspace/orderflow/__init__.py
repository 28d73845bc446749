from .storage import dump, load
from .transitions import advance

__all__ = ["advance", "dump", "load"]

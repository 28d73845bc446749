from .api import paginate

__all__ = ["paginate"]

from .resolver import latest, satisfying

__all__ = ["latest", "satisfying"]

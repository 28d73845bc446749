from .bill import settle

__all__ = ["settle"]

from .reader import read_records

__all__ = ["read_records"]

from .index import Index

__all__ = ["Index"]

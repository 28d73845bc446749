from .sessions import SessionStore

__all__ = ["SessionStore"]

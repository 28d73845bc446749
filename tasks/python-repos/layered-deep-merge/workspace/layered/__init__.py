from .settings import resolve

__all__ = ["resolve"]

from .layout import wrap

__all__ = ["wrap"]

from .models import Item
from .store import Store

__all__ = ["Item", "Store"]

from .daily import next_run
from .zones import zone

__all__ = ["next_run", "zone"]

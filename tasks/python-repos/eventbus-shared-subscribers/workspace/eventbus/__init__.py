from .bus import Bus
from .topic import Topic

__all__ = ["Bus", "Topic"]

from .excerpt import excerpt
from .positions import line_and_column

__all__ = ["excerpt", "line_and_column"]

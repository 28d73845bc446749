from .parse import parse_lines
from .report import totals_by_category

__all__ = ["parse_lines", "totals_by_category"]

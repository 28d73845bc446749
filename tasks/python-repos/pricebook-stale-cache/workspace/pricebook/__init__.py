from .catalog import Catalog
from .pricing import PriceCalculator

__all__ = ["Catalog", "PriceCalculator"]

from .models import Line, Order
from .orders import add_line, new_order
from .totals import order_total

__all__ = ["Line", "Order", "add_line", "new_order", "order_total"]

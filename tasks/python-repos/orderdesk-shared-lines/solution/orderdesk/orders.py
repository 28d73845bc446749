from dataclasses import replace

from .models import Line, Order

# Every new order starts from this template; callers override what differs.
DEFAULT_ORDER = Order()


def new_order(**overrides):
    # replace() copies field values by reference: each order needs a list of its own.
    overrides.setdefault("lines", list(DEFAULT_ORDER.lines))
    return replace(DEFAULT_ORDER, **overrides)


def add_line(order, sku, quantity, unit_cents):
    if quantity <= 0:
        raise ValueError("quantity must be positive")
    order.lines.append(Line(sku, quantity, unit_cents))
    return order

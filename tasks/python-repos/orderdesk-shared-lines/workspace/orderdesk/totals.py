def order_total(order):
    return sum(line.quantity * line.unit_cents for line in order.lines)

from .states import ALLOWED, Status


class IllegalTransition(Exception):
    pass


def advance(order, target):
    """Moves `order` (a dict with a Status under "status") to `target`, if the state machine allows it."""
    target = Status(target)
    current = order["status"]
    if target not in ALLOWED.get(current, set()):
        raise IllegalTransition(f"{getattr(current, 'value', current)} -> {target.value}")
    order["status"] = target
    order.setdefault("history", []).append(target.value)
    return order

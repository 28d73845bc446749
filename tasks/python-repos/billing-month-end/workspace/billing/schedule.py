from .months import add_months
from .plans import months_per_period


def renewal_dates(start, plan, count):
    """The next `count` renewal dates of a subscription that started on `start`, each counted from the start."""
    step = months_per_period(plan)
    return [add_months(start, step * n) for n in range(1, count + 1)]

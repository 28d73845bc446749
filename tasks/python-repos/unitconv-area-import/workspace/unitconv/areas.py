from .lengths import METERS


def convert(value, from_unit, to_unit):
    """An area given in square `from_unit` as square `to_unit` (a length factor, squared)."""
    return value * (METERS[from_unit] / METERS[to_unit]) ** 2

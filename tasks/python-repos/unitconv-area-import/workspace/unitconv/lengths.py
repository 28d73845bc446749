METERS = {"m": 1.0, "cm": 0.01, "ft": 0.3048, "in": 0.0254}


def convert(value, from_unit, to_unit):
    """A length from one unit to another."""
    return value * METERS[from_unit] / METERS[to_unit]

from .areas import convert as convert_area
from .lengths import convert as convert_length


def describe_room(width, depth, unit, to_unit):
    """Width and depth in `to_unit`, and the floor area in square `to_unit`, each rounded to 2 places."""
    return {
        "width": round(convert_length(width, unit, to_unit), 2),
        "depth": round(convert_length(depth, unit, to_unit), 2),
        "area": round(convert_area(width * depth, unit, to_unit), 2),
    }

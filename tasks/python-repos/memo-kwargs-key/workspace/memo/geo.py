import math

from .cache import memoize

EARTH_RADIUS = {"km": 6371.0, "mi": 3958.8}


@memoize
def distance(a, b, unit="km"):
    """Great-circle distance between two (lat, lon) points in degrees, rounded to 1 place."""
    (lat1, lon1), (lat2, lon2) = [(math.radians(x), math.radians(y)) for x, y in (a, b)]
    h = math.sin((lat2 - lat1) / 2) ** 2 + math.cos(lat1) * math.cos(lat2) * math.sin((lon2 - lon1) / 2) ** 2
    return round(2 * EARTH_RADIUS[unit] * math.asin(math.sqrt(h)), 1)

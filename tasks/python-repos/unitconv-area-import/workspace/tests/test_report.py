from unitconv import describe_room
from unitconv.areas import convert as area
from unitconv.lengths import convert as length


def test_same_unit():
    assert describe_room(3, 4, "m", "m") == {"width": 3, "depth": 4, "area": 12}


def test_length_conversion():
    assert round(length(1, "ft", "in"), 6) == 12


def test_area_helper():
    assert round(area(1, "m", "cm")) == 10000

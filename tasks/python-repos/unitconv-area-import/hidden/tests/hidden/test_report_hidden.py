from unitconv import describe_room


def test_feet_to_meters():
    assert describe_room(10, 12, "ft", "m") == {"width": 3.05, "depth": 3.66, "area": 11.15}


def test_meters_to_centimeters():
    assert describe_room(2, 3, "m", "cm") == {"width": 200, "depth": 300, "area": 60000}


def test_same_unit_again():
    assert describe_room(1, 1, "in", "in")["area"] == 1

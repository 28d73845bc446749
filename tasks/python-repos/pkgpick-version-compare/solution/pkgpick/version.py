def parse(text):
    """'1.10.2' -> a key that orders versions; a missing part counts as 0 ('1.2' == '1.2.0')."""
    parts = text.strip().lstrip("v").split(".")
    if not all(part.isdigit() for part in parts):
        raise ValueError(f"not a version: {text!r}")
    numbers = [int(part) for part in parts]
    while len(numbers) < 3:
        numbers.append(0)
    return tuple(numbers)

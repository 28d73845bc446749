def apply(cents, percent):
    """A percentage off, rounded half up to whole cents."""
    return (cents * (100 - percent) + 50) // 100

from datetime import timedelta, timezone

_OFFSETS = {"UTC": 0, "NYC-STD": -5, "BERLIN-STD": 1, "TOKYO": 9, "AUCKLAND-STD": 12}


def zone(name):
    """A fixed-offset zone by its short name."""
    try:
        return timezone(timedelta(hours=_OFFSETS[name]), name)
    except KeyError:
        raise KeyError(f"unknown zone {name!r}; known: {', '.join(sorted(_OFFSETS))}") from None

from datetime import timezone


def require_aware(moment):
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError("a naive datetime has no place in time; give it a tzinfo")
    return moment


def day_of(moment):
    """The calendar day of an aware moment, as seen on a UTC clock."""
    return require_aware(moment).astimezone(timezone.utc).date()

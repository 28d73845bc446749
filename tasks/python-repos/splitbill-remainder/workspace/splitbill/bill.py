from .money import cents, show
from .shares import split_evenly


def settle(total, names):
    """What each person pays of `total` (text like '10.00'), in the order the names are given."""
    shares = split_evenly(cents(total), len(names))
    return {name: show(share) for name, share in zip(names, shares)}

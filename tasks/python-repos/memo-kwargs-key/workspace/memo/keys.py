def make_key(args, kwargs):
    """A hashable key for one call."""
    return tuple(args)

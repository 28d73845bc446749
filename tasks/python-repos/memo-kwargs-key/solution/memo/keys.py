def make_key(args, kwargs):
    """A hashable key for one call: its positional arguments and its keyword arguments, in any order."""
    return tuple(args), tuple(sorted(kwargs.items()))

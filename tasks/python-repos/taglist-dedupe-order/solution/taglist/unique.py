def unique(items):
    """The items without repeats, each where it first appeared."""
    return list(dict.fromkeys(items))

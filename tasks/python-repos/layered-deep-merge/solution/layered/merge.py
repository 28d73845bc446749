def deep_merge(base, override):
    """A new dict: `override` laid over `base`, nested dicts merged key by key; neither input changes."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged

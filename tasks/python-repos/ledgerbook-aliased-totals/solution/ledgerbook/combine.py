def merge_totals(first, second):
    """The sum of two {account: cents} mappings, as a new mapping."""
    merged = dict(first)
    for account, cents in second.items():
        merged[account] = merged.get(account, 0) + cents
    return merged

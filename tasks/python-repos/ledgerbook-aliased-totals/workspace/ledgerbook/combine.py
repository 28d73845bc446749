def merge_totals(first, second):
    """The sum of two {account: cents} mappings."""
    merged = first
    for account, cents in second.items():
        merged[account] = merged.get(account, 0) + cents
    return merged

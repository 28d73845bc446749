def totals_by_account(entries):
    """{account: cents} of (account, cents) entries."""
    totals = {}
    for account, cents in entries:
        totals[account] = totals.get(account, 0) + cents
    return totals

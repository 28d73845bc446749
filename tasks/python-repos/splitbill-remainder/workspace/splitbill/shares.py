def split_evenly(total_cents, people):
    """`people` shares of `total_cents`, as equal as whole cents allow, largest first."""
    if people < 1:
        raise ValueError("at least one person pays")
    share = total_cents // people
    return [share] * people

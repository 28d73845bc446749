def cents(amount_text):
    """'12.30' -> 1230."""
    whole, _, fraction = amount_text.partition(".")
    return int(whole) * 100 + int((fraction + "00")[:2])


def show(total_cents):
    return f"{total_cents // 100}.{total_cents % 100:02d}"

def matches(pattern, name):
    """`orders.*` matches `orders.created`; `*` matches one dotted segment."""
    want = pattern.split(".")
    have = name.split(".")
    return len(want) == len(have) and all(w == "*" or w == h for w, h in zip(want, have))

"""Ledger lines: `category,amount`, one entry per line; blank lines and # comments are skipped."""


def parse_lines(text):
    entries = []
    lines = text.splitlines()
    for line in lines[:-1]:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        category, amount = line.split(",")
        entries.append((category.strip(), float(amount)))
    return entries

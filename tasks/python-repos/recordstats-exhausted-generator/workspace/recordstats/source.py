def parse_records(text):
    """(name, value) pairs from `name: value` lines, one at a time; blank lines skipped."""
    for line in text.splitlines():
        if not line.strip():
            continue
        name, _, value = line.partition(":")
        yield name.strip(), float(value)

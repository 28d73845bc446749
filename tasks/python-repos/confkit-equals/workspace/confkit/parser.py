"""Reads `key = value` lines into a flat dict of strings; `#` starts a comment line, `[name]` a section."""


def parse(text):
    values = {}
    section = ""
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
            continue
        if "=" not in line:
            raise ValueError(f"line {number}: expected key = value, got {raw!r}")
        key, value = line.split("=")
        name = f"{section}.{key.strip()}" if section else key.strip()
        values[name] = value.strip()
    return values

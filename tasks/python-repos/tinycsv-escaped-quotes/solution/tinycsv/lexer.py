def split_fields(line, delimiter=","):
    """The fields of one CSV line; a field in double quotes may hold the delimiter, and `""` stands for `"`."""
    fields = []
    current = []
    quoted = False
    i = 0
    while i < len(line):
        char = line[i]
        if quoted:
            if char == '"' and line[i + 1 : i + 2] == '"':
                current.append('"')
                i += 1
            elif char == '"':
                quoted = False
            else:
                current.append(char)
        elif char == '"':
            quoted = True
        elif char == delimiter:
            fields.append("".join(current))
            current = []
        else:
            current.append(char)
        i += 1
    if quoted:
        raise ValueError(f"unterminated quoted field in {line!r}")
    fields.append("".join(current))
    return fields

def line_of(text, offset):
    """The 1-based line holding the character at `offset` (a newline belongs to the line it ends)."""
    if not 0 <= offset <= len(text):
        raise IndexError(f"offset {offset} is outside the text (length {len(text)})")
    return text.count("\n", 0, offset) + 1


def line_start(text, offset):
    return text.rfind("\n", 0, offset) + 1


def line_and_column(text, offset):
    """(line, column), both 1-based."""
    return line_of(text, offset), offset - line_start(text, offset) + 1

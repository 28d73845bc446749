from .positions import line_of
from .render import numbered


def excerpt(text, offset, context=1):
    """The line holding `offset` with `context` lines either side, numbered, the line itself marked."""
    lines = text.split("\n")
    line = line_of(text, offset)
    first = max(1, line - context)
    last = min(len(lines), line + context)
    return numbered(lines, first, last, line)

"""Greedy line wrapping."""
from .tokens import words


def wrap(text, width):
    if width < 1:
        raise ValueError("width must be at least 1")
    lines = []
    current = ""
    for word in words(text):
        candidate = word if not current else current + " " + word
        if len(candidate) < width:
            current = candidate
        else:
            if current:
                lines.append(current)
            current = word
    if current:
        lines.append(current)
    return lines

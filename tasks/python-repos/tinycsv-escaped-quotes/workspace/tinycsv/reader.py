from .lexer import split_fields
from .schema import check_width


def read_records(text, delimiter=","):
    """Dicts keyed by the header line's names, one per following non-empty line."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return []
    header = split_fields(lines[0], delimiter)
    records = []
    for number, line in enumerate(lines[1:], start=2):
        fields = split_fields(line, delimiter)
        check_width(header, fields, number)
        records.append(dict(zip(header, fields)))
    return records

from .source import parse_records
from .stats import summarize


def summarize_text(text):
    return summarize(parse_records(text))

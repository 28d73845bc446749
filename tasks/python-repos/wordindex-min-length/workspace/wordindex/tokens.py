import re

_WORD = re.compile(r"[A-Za-z0-9']+")


def split_words(text, lower=True, min_len=1):
    """The words of a text, lower-cased unless asked not to, dropping words shorter than min_len."""
    words = _WORD.findall(text)
    if lower:
        words = [word.lower() for word in words]
    return [word for word in words if len(word) >= min_len]

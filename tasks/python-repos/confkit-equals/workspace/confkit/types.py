"""Turns the strings the parser reads into typed values."""

TRUE = {"1", "true", "yes", "on"}
FALSE = {"0", "false", "no", "off"}


def to_bool(text):
    lowered = text.lower()
    if lowered in TRUE:
        return True
    if lowered in FALSE:
        return False
    raise ValueError(f"not a boolean: {text!r}")


def to_int(text):
    return int(text, 0)


def to_list(text):
    return [item.strip() for item in text.split(",") if item.strip()]

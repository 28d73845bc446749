"""How a model's free reply becomes the code or document it meant: shared by the graders of generated tasks.

Small models wrap an answer in a Markdown fence, prefix it with `x =` or `return`, or print it; the grader takes
the answer out of that wrapping so the checks judge the answer, not its packaging. Anything else in the reply
stays and makes the answer invalid.
"""

from __future__ import annotations

import re

FENCE = re.compile(r"```[A-Za-z0-9_+-]*[ \t]*\n(.*?)(?:\n[ \t]*```|\Z)", re.DOTALL)
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\s*=(?!=)\s*")
PRINT_CALL = re.compile(r"^print\((.*)\)$", re.DOTALL)


def unfenced(reply: str) -> str:
    """The first fenced block's body when the reply has one, else the reply; surrounding whitespace removed."""
    match = FENCE.search(reply)
    return (match.group(1) if match else reply).strip()


def expression_of(reply: str) -> str:
    """The expression a reply gives: unfenced, one line, without `name =`, `return` or `print(...)` around it."""
    text = unfenced(reply)
    if text.startswith("`") and text.endswith("`") and len(text) > 1:
        text = text.strip("`").strip()
    text = text.strip()
    if text.startswith("return "):
        text = text[len("return ") :].strip()
    text = ASSIGNMENT.sub("", text, count=1)
    printed = PRINT_CALL.match(text)
    if printed:
        text = printed.group(1).strip()
    return text

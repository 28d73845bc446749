"""How a model's free reply becomes the code or document it meant: shared by the graders of generated tasks.

Small models wrap an answer in a Markdown fence, in a function's `return`, in inline code inside prose, prefix it
with `x =` or print it; the grader takes the answer out of that wrapping so the checks judge the answer, not its
packaging. One answer is taken, the first that parses, so a reply listing several tries gets its first.
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


INLINE_CODE = re.compile(r"`([^`\n]+)`")


def expression_candidates(reply: str) -> list[str]:
    """Where an answer may sit, most telling first: a fenced block's `return` lines, its other lines, inline code, every line."""
    candidates: list[str] = []
    fence = FENCE.search(reply)
    if fence:
        lines = [line.strip() for line in fence.group(1).split("\n")]
        candidates += [line for line in lines if line.startswith("return ")] + lines
    candidates += INLINE_CODE.findall(reply)
    candidates += [line.strip() for line in reply.split("\n")]
    return candidates


def find_expression(reply: str, variable: str | None = None) -> str | None:
    """
    The first candidate that is one Python expression once unwrapped (`expression_of`), or None. A line assigning the
    task's input `variable` sets up an example input (`xs = [1, 2]`), not the answer, and is passed over.
    """
    setup = re.compile(rf"^{re.escape(variable)}\s*=(?!=)") if variable else None
    for candidate in expression_candidates(reply):
        if setup is not None and setup.match(candidate):
            continue
        text = expression_of(candidate)
        if not text or text.startswith("#") or "\n" in text:
            continue
        try:
            compile(text, "<reply>", "eval")
        except (SyntaxError, ValueError):
            continue
        return text
    return None


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

"""Grades a one-expression reply on hidden inputs, in the grading sandbox; the host decides the verdict.

Reads the reply (`answer.txt`; its expression found by `reply_code.find_expression`) and the hidden cases (`cases.json`: the variable's name and its values), then writes
`results/valid.txt` ("valid" when the reply is a Python expression) and `results/case-N.json` (the expression's
value on case N, as JSON, or an error object). The task's output checks compare those files with the expected
values, which never enter the sandbox.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

from reply_code import find_expression

CASE_SECONDS = 2


def evaluate_case(code, variable: str, value: object, path: str) -> None:
    """Evaluates in a forked child, so a case that never returns (a loop inside C code ignores signals) is killed alone."""
    child = os.fork()
    if child == 0:
        try:
            result = eval(code, {"__builtins__": __builtins__}, {variable: value})  # noqa: S307 - the sandbox isolates it
            text = json.dumps(result)
        except BaseException as error:  # noqa: BLE001 - whatever the reply raises is its failure
            text = json.dumps({"error": type(error).__name__})
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        os._exit(0)
    deadline = time.monotonic() + CASE_SECONDS
    while time.monotonic() < deadline:
        if os.waitpid(child, os.WNOHANG) != (0, 0):
            return
        time.sleep(0.005)
    os.kill(child, signal.SIGKILL)
    os.waitpid(child, 0)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump({"error": f"ran past {CASE_SECONDS} s"}, handle)


def main() -> int:
    with open("cases.json", encoding="utf-8") as handle:
        cases = json.load(handle)
    with open("answer.txt", encoding="utf-8", errors="replace") as handle:
        reply = handle.read()
    os.makedirs("results", exist_ok=True)
    expression = find_expression(reply, cases["variable"])
    code = compile(expression, "<reply>", "eval") if expression is not None else None
    with open(os.path.join("results", "valid.txt"), "w", encoding="utf-8") as handle:
        handle.write("valid" if code is not None else "invalid")
    for number, value in enumerate(cases["values"], start=1):
        path = os.path.join("results", f"case-{number}.json")
        if code is None:
            with open(path, "w", encoding="utf-8") as handle:
                json.dump({"error": "not an expression"}, handle)
        else:
            evaluate_case(code, cases["variable"], value, path)
    return 0


if __name__ == "__main__":
    sys.exit(main())

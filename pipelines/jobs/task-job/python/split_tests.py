#!/usr/bin/env python3
"""Turn assert-style test code into pytest files with a visible/hidden split.

Reads JSON Lines on stdin, one request per line, and writes one JSON line per request to stdout:

    {"key": "...", "style": "check-function", "code": "<defines check(candidate)>",
     "entry_point": "f", "module": "f.py", "visible_fraction": 0.5}
    {"key": "...", "style": "assert-list", "asserts": ["assert f(1) == 2", ...],
     "setup": "<optional code run before the asserts>", "module": "f.py", "visible_fraction": 0.5}
  ->
    {"key": "...", "visible_tests": "<pytest source>", "hidden_tests": "<pytest source>",
     "cases": 7, "visible_cases": 4}
    {"key": "...", "error": "<why the tests cannot be converted>"}

Each top-level statement of the check function that holds an assert becomes one test case, preceded by
every non-assert statement before it (the set-up it may rely on). Trivially true asserts (`assert True`)
are dropped. The hidden file holds every case, so the hidden verdict is the full test suite; the visible
file holds the first ceil(visible_fraction * cases) of them, the ones a data set usually lists first and
simplest. Both files import the module's public names, so tests can call helpers the prompt defines.
Standard library only: nothing here runs the tests.
"""

from __future__ import annotations

import ast
import json
import math
import sys


class ConversionError(Exception):
    pass


def _has_assert(node: ast.AST) -> bool:
    return any(isinstance(child, ast.Assert) for child in ast.walk(node))


def _is_trivial(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Assert) and isinstance(stmt.test, ast.Constant) and bool(stmt.test.value)


def _module_name(module: str) -> str:
    if not module.endswith(".py") or not module[:-3].isidentifier():
        raise ConversionError(f"module {module!r} is not an importable Python file name")
    return module[:-3]


def _cases(setup_and_asserts: list[ast.stmt]) -> list[list[ast.stmt]]:
    cases: list[list[ast.stmt]] = []
    setup: list[ast.stmt] = []
    for stmt in setup_and_asserts:
        if _has_assert(stmt):
            if not _is_trivial(stmt):
                cases.append([*setup, stmt])
        else:
            setup.append(stmt)
    if not cases:
        raise ConversionError("the tests hold no assert that could fail")
    return cases


def _render(header: list[str], cases: list[list[ast.stmt]], count: int) -> str:
    lines = [*header, ""]
    for index, body in enumerate(cases[:count], start=1):
        lines.append("")
        lines.append(f"def test_case_{index:02d}():")
        for stmt in body:
            for line in ast.unparse(stmt).split("\n"):
                lines.append(f"    {line}" if line else "")
    return "\n".join(lines) + "\n"


def _parse(code: str, what: str) -> ast.Module:
    try:
        return ast.parse(code)
    except SyntaxError as exc:
        raise ConversionError(f"{what} do not parse: line {exc.lineno}: {exc.msg}") from None
    except ValueError as exc:
        raise ConversionError(f"{what} do not parse: {exc}") from None


def convert_check_function(code: str, entry_point: str, module: str, visible_fraction: float) -> dict[str, object]:
    name = _module_name(module)
    if not entry_point.isidentifier():
        raise ConversionError(f"entry point {entry_point!r} is not a Python name")
    tree = _parse(code, "the tests")
    checks = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "check"]
    if not checks:
        raise ConversionError("the tests define no check(candidate) function")
    check = checks[-1]
    if len(check.args.args) != 1:
        raise ConversionError(f"check() takes {len(check.args.args)} arguments; expected one (the candidate)")
    candidate = check.args.args[0].arg
    preamble = [ast.unparse(node) for node in tree.body if node is not check]
    header = [f"from {name} import *  # noqa: F401,F403 (helpers the prompt defines)", f"from {name} import {entry_point} as {candidate}", *preamble]
    body = check.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
        body = body[1:]  # docstring
    return _split(header, _cases(body), visible_fraction)


def convert_assert_list(asserts: list[str], setup: str, module: str, visible_fraction: float) -> dict[str, object]:
    name = _module_name(module)
    statements: list[ast.stmt] = []
    for index, text in enumerate(asserts):
        statements.extend(_parse(text, f"assert {index + 1} of the tests").body)
    header = [f"from {name} import *  # noqa: F401,F403", *(ast.unparse(node) for node in _parse(setup, "the test set-up").body)]
    return _split(header, _cases(statements), visible_fraction)


def _split(header: list[str], cases: list[list[ast.stmt]], visible_fraction: float) -> dict[str, object]:
    if not 0 < visible_fraction < 1:
        raise ConversionError(f"visible_fraction must be between 0 and 1, got {visible_fraction}")
    visible = min(len(cases), max(1, math.ceil(visible_fraction * len(cases))))
    return {
        "visible_tests": _render(header, cases, visible),
        "hidden_tests": _render(header, cases, len(cases)),
        "cases": len(cases),
        "visible_cases": visible,
    }


def handle(request: dict[str, object]) -> dict[str, object]:
    style = request.get("style")
    fraction = float(request.get("visible_fraction", 0.5))  # type: ignore[arg-type]
    module = str(request.get("module", ""))
    if style == "check-function":
        return convert_check_function(str(request["code"]), str(request["entry_point"]), module, fraction)
    if style == "assert-list":
        raw = request["asserts"]
        asserts = [str(item) for item in raw] if isinstance(raw, list) else [line for line in str(raw).split("\n") if line.strip()]
        return convert_assert_list(asserts, str(request.get("setup") or ""), module, fraction)
    raise ConversionError(f"unknown test style {style!r}")


def main() -> int:
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        try:
            answer = {"key": request.get("key"), **handle(request)}
        except ConversionError as exc:
            answer = {"key": request.get("key"), "error": str(exc)}
        except (KeyError, TypeError, ValueError) as exc:
            answer = {"key": request.get("key"), "error": f"malformed request: {exc!r}"}
        except (RecursionError, MemoryError) as exc:
            answer = {"key": request.get("key"), "error": f"the tests are too deeply nested or too large to convert ({type(exc).__name__})"}
        # One line at a time, so the answers before anything that kills this process are kept.
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())

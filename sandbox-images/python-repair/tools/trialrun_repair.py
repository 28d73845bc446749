#!/usr/bin/env python3
"""Enumerate and apply candidate single-site edits to a Python source file.

This is the program-repair agent's "edit" tool inside the sandbox. It is
stdlib-only (Python 3.11) and its CLI output is parsed by the TypeScript
environment, so the JSON shapes below are a contract:

    trialrun_repair.py list <file.py>
        {"file": "<file.py>", "edits": [{"id": 0, "kind": "compare-op",
          "line": 12, "col": 8, "end_line": 12, "end_col": 9,
          "before": "<", "after": "<="}, ...]}
    trialrun_repair.py apply <file.py> <id>
        {"applied": {<edit object>}}
    trialrun_repair.py revert <file.py>
        {"reverted": true} | {"reverted": false}

On any error the exit code is 2 and stdout is {"error": "<message>"}.

Positions: `line`/`end_line` are 1-based, `col`/`end_col` are 0-based
*character* offsets within the line (end exclusive). Applying an edit
replaces exactly that span with `after`; nothing else in the file changes.

Edits are derived from the AST but applied as text replacements so a diff
always touches a single site and formatting/comments survive.
"""

from __future__ import annotations

import ast
import bisect
import hashlib
import io
import json
import os
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, NoReturn

MAX_EDITS = 150
STATE_DIR_ENV = "TRIALRUN_REPAIR_STATE_DIR"
DEFAULT_STATE_DIR = "/tmp/.trialrun-repair"

# The one list of edit kinds, shipped beside this tool (envs/program-repair/edit-kinds.ts reads it too).
KINDS = tuple(sorted(json.loads(Path(__file__).with_name("edit_kinds.json").read_text(encoding="utf-8"))["kinds"]))

# Plausible slips only, so the list stays small enough for a policy to rank.
COMPARE_SWAPS: dict[str, tuple[str, ...]] = {
    "<": ("<=", ">", ">="),
    "<=": ("<", ">=", ">"),
    ">": (">=", "<", "<="),
    ">=": (">", "<=", "<"),
    "==": ("!=",),
    "!=": ("==",),
    "is": ("is not",),
    "is not": ("is",),
    "in": ("not in",),
    "not in": ("in",),
}
ARITH_SWAPS: dict[str, tuple[str, ...]] = {
    "+": ("-", "*"),
    "-": ("+",),
    "*": ("+", "/"),
    "/": ("//", "*"),
    "//": ("/", "%"),
    "%": ("//",),
    "**": ("*",),
}
NON_COMMUTATIVE = (ast.Sub, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.LShift, ast.RShift, ast.MatMult)
PREDICATE_BUILTINS = frozenset({"isinstance", "issubclass", "all", "any", "callable", "hasattr", "bool"})
PREDICATE_PREFIXES = ("is", "has", "can", "should", "startswith", "endswith")

# Operator precedence (higher binds tighter); used only to decide when a
# rewritten operand needs parentheses to keep its meaning.
_BINOP_PREC: dict[type, int] = {
    ast.BitOr: 7, ast.BitXor: 8, ast.BitAnd: 9, ast.LShift: 10, ast.RShift: 10,
    ast.Add: 11, ast.Sub: 11, ast.Mult: 12, ast.Div: 12, ast.FloorDiv: 12,
    ast.Mod: 12, ast.MatMult: 12, ast.Pow: 14,
}
_PREC_NOT = 5
_PREC_ADD = 11


def _prec(node: ast.expr) -> int:
    if isinstance(node, ast.NamedExpr):
        return 0
    if isinstance(node, ast.Lambda):
        return 1
    if isinstance(node, ast.IfExp):
        return 2
    if isinstance(node, ast.BoolOp):
        return 3 if isinstance(node.op, ast.Or) else 4
    if isinstance(node, ast.UnaryOp):
        return _PREC_NOT if isinstance(node.op, ast.Not) else 13
    if isinstance(node, ast.Compare):
        return 6
    if isinstance(node, ast.BinOp):
        return _BINOP_PREC[type(node.op)]
    if isinstance(node, ast.Await):
        return 15
    return 16  # atoms, calls, subscripts, attributes


class ToolError(Exception):
    """A user-facing failure: reported as {"error": ...} with exit code 2."""


@dataclass(frozen=True)
class Edit:
    start: int  # absolute character offsets into the source text
    end: int
    kind: str
    after: str


@dataclass(frozen=True)
class _Tok:
    type: int
    string: str
    start: int
    end: int


def _int_value(node: ast.expr) -> int | None:
    """The value of an int literal, counting a unary minus as part of it."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and type(node.operand.value) is int
    ):
        return -node.operand.value
    return None


def _statement_children(node: ast.AST) -> Iterator[ast.stmt]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.stmt):
            yield child
        elif isinstance(child, (ast.excepthandler, ast.match_case)):
            yield from _statement_children(child)


def _is_literal(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) or _int_value(node) is not None


def _is_predicate_call(node: ast.expr) -> bool:
    if not isinstance(node, ast.Call):
        return False
    if isinstance(node.func, ast.Name):
        name = node.func.id
        if name in PREDICATE_BUILTINS:
            return True
    elif isinstance(node.func, ast.Attribute):
        name = node.func.attr
    else:
        return False
    return name.startswith(PREDICATE_PREFIXES)


def _is_boolean_looking(node: ast.expr) -> bool:
    if isinstance(node, ast.Compare) or _is_predicate_call(node):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return True
    if isinstance(node, ast.Constant) and isinstance(node.value, bool):
        return True
    if isinstance(node, ast.BoolOp):
        return all(_is_boolean_looking(v) for v in node.values)
    return False


def _bool_names(func: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Local names that evidently hold a bool (for `return x` -> `return not x`)."""
    names: set[str] = set()
    for arg in func.args.args + func.args.kwonlyargs + func.args.posonlyargs:
        if isinstance(arg.annotation, ast.Name) and arg.annotation.id == "bool":
            names.add(arg.arg)
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and _is_boolean_looking(node.value):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            if (isinstance(node.annotation, ast.Name) and node.annotation.id == "bool") or (
                node.value is not None and _is_boolean_looking(node.value)
            ):
                names.add(node.target.id)
    return names


class _Finder:
    """Walks one parsed module and collects raw candidate edits."""

    def __init__(self, source: str, tree: ast.Module) -> None:
        self.src = source
        self.tree = tree
        lines = source.split("\n")
        self.lines = lines
        self.line_starts: list[int] = []
        offset = 0
        for line in lines:
            self.line_starts.append(offset)
            offset += len(line) + 1
        self.tokens = self._tokenize()
        self.token_starts = [t.start for t in self.tokens]
        self.edits: list[Edit] = []
        # Node ids whose int literals belong to range-bound/slice-bound, or whose
        # positions are unreliable (inside f-strings).
        self.no_int: set[int] = set()
        self.skip: set[int] = set()

    # -- positions ---------------------------------------------------------

    def _offset(self, line: int, char_col: int) -> int:
        return self.line_starts[line - 1] + char_col

    def _ast_offset(self, line: int, byte_col: int) -> int:
        # ast columns are UTF-8 byte offsets; convert to characters.
        text = self.lines[line - 1]
        char_col = len(text.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))
        return self._offset(line, char_col)

    def span(self, node: ast.AST) -> tuple[int, int]:
        return (
            self._ast_offset(node.lineno, node.col_offset),  # type: ignore[attr-defined]
            self._ast_offset(node.end_lineno, node.end_col_offset),  # type: ignore[attr-defined]
        )

    def text(self, node: ast.AST) -> str:
        start, end = self.span(node)
        return self.src[start:end]

    def _tokenize(self) -> list[_Tok]:
        toks: list[_Tok] = []
        try:
            for tok in tokenize.generate_tokens(io.StringIO(self.src).readline):
                if tok.type in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT,
                                tokenize.DEDENT, tokenize.ENDMARKER):
                    continue
                toks.append(_Tok(tok.type, tok.string, self._offset(*tok.start), self._offset(*tok.end)))
        except (tokenize.TokenError, SyntaxError) as exc:
            raise ToolError(f"cannot tokenize source: {exc}") from exc
        return toks

    def tokens_between(self, start: int, end: int) -> list[_Tok]:
        """Significant tokens fully inside [start, end), ignoring grouping parens."""
        i = bisect.bisect_left(self.token_starts, start)
        out: list[_Tok] = []
        while i < len(self.tokens) and self.tokens[i].end <= end:
            if self.tokens[i].string not in ("(", ")"):
                out.append(self.tokens[i])
            i += 1
        return out

    def operator_between(self, start: int, end: int) -> tuple[int, int, str] | None:
        toks = self.tokens_between(start, end)
        if not toks:
            return None
        return toks[0].start, toks[-1].end, " ".join(t.string for t in toks)

    def position(self, offset: int) -> tuple[int, int]:
        """(1-based line, 0-based character column) of an absolute offset."""
        line = bisect.bisect_right(self.line_starts, offset)
        return line, offset - self.line_starts[line - 1]

    def statement_span(self, start: int, end: int) -> tuple[int, int]:
        """Span of the innermost statement holding [start, end), from the start of its first line.

        Re-parsing just that statement keeps validation cheap on large files.
        """
        node: ast.AST = self.tree
        span = (0, len(self.src))
        while True:
            for child in _statement_children(node):
                first = min([child.lineno] + [d.lineno for d in getattr(child, "decorator_list", [])])
                (own_start, child_end), line_start = self.span(child), self.line_starts[first - 1]
                # Start at the line start (keeping the indentation) unless the statement follows
                # other code on its line (`else: x = 1`, `a; b`): then it is simple and stands alone.
                child_start = line_start if not self.src[line_start:own_start].strip() or first < child.lineno \
                    else own_start
                if child_start <= start and end <= child_end:
                    if self.src.startswith("elif", own_start):
                        return span  # an `elif` branch cannot be parsed on its own
                    node, span = child, (child_start, child_end)
                    break
            else:
                return span

    def is_valid(self, edit: Edit) -> bool:
        """Whether applying `edit` leaves the statement around it syntactically valid."""
        lo, hi = self.statement_span(edit.start, edit.end)
        snippet = self.src[lo:edit.start] + edit.after + self.src[edit.end:hi]
        if snippet[:1] in (" ", "\t"):
            snippet = "if 1:\n" + snippet  # give an indented statement a block to live in
        try:
            ast.parse(snippet)
        except (SyntaxError, ValueError):
            return False
        return True

    def add(self, start: int, end: int, kind: str, after: str) -> None:
        self.edits.append(Edit(start, end, kind, after))

    # -- text helpers ------------------------------------------------------

    def binop_parts(self, node: ast.BinOp) -> tuple[int, int, int, int] | None:
        """(left_end, op_start, op_end, right_start) using text that includes operand parens."""
        start, end = self.span(node)
        found = self.operator_between(self.span(node.left)[1], self.span(node.right)[0])
        if found is None:
            return None
        op_start, op_end, _ = found
        left_end = start + len(self.src[start:op_start].rstrip())
        right_text = self.src[op_end:end]
        right_start = op_end + (len(right_text) - len(right_text.lstrip()))
        return left_end, op_start, op_end, right_start

    def plus_minus(self, node: ast.expr, delta: int) -> str | None:
        """Source text for `node + delta`, folding into an existing `x +/- k`."""
        value = _int_value(node)
        if value is not None:
            return str(value + delta)
        if (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, (ast.Add, ast.Sub))
            and isinstance(node.right, ast.Constant)
            and type(node.right.value) is int
        ):
            parts = self.binop_parts(node)
            if parts is None:
                return None
            left_end, op_start, _, right_start = parts
            start, _ = self.span(node)
            left = self.src[start:left_end]
            k = node.right.value if isinstance(node.op, ast.Add) else -node.right.value
            k += delta
            if k == 0:
                return left
            same_sign = (k > 0) == isinstance(node.op, ast.Add)
            if same_sign:  # keep the original spacing, change only the number
                return self.src[start:right_start] + str(abs(k))
            return f"{left} {'+' if k > 0 else '-'} {abs(k)}"
        text = self.text(node)
        if _prec(node) < _PREC_ADD:
            text = f"({text})"
        return f"{text} {'+' if delta > 0 else '-'} {abs(delta)}"

    # -- traversal ---------------------------------------------------------

    def collect(self) -> list[Edit]:
        self._mark(self.tree)
        func_stack: list[ast.FunctionDef | ast.AsyncFunctionDef | None] = [None]
        self._visit(self.tree, func_stack)
        return self.edits

    def _mark(self, tree: ast.AST) -> None:
        for node in ast.walk(tree):
            if isinstance(node, ast.JoinedStr):
                self.skip.update(id(n) for n in ast.walk(node))
            elif isinstance(node, ast.Slice):
                self.no_int.update(id(n) for n in ast.walk(node))
            elif self._is_range_call(node):
                for arg in node.args:  # type: ignore[attr-defined]
                    self.no_int.update(id(n) for n in ast.walk(arg))

    @staticmethod
    def _is_range_call(node: ast.AST) -> bool:
        return (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "range"
            and 1 <= len(node.args) <= 3
            and not node.keywords
            and not any(isinstance(a, ast.Starred) for a in node.args)
        )

    def _visit(self, node: ast.AST, funcs: list[ast.FunctionDef | ast.AsyncFunctionDef | None]) -> None:
        if id(node) in self.skip:
            return
        is_func = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        if is_func:
            funcs.append(node)  # type: ignore[arg-type]
        self._edits_for(node, funcs[-1])
        for child in ast.iter_child_nodes(node):
            self._visit(child, funcs)
        if is_func:
            funcs.pop()

    def _edits_for(self, node: ast.AST, func: ast.FunctionDef | ast.AsyncFunctionDef | None) -> None:
        if isinstance(node, ast.Compare):
            self._compare(node)
        elif isinstance(node, ast.BinOp):
            self._binop(node)
        elif isinstance(node, ast.AugAssign):
            self._augassign(node)
        elif isinstance(node, ast.BoolOp):
            self._boolop(node)
        elif isinstance(node, (ast.If, ast.While, ast.Assert, ast.IfExp)):
            self._negate(node.test)
        elif isinstance(node, ast.Return) and node.value is not None:
            self._return(node.value, func)
        elif isinstance(node, ast.Slice):
            self._slice(node)
        elif isinstance(node, ast.Call):
            self._call(node)
        if isinstance(node, (ast.Constant, ast.UnaryOp)):
            self._int_literal(node)

    # -- edit kinds --------------------------------------------------------

    def _compare(self, node: ast.Compare) -> None:
        prev: ast.expr = node.left
        for right in node.comparators:
            found = self.operator_between(self.span(prev)[1], self.span(right)[0])
            if found is not None and found[2] in COMPARE_SWAPS:
                for after in COMPARE_SWAPS[found[2]]:
                    self.add(found[0], found[1], "compare-op", after)
            prev = right

    def _binop(self, node: ast.BinOp) -> None:
        parts = self.binop_parts(node)
        if parts is None:
            return
        left_end, op_start, op_end, right_start = parts
        op = self.src[op_start:op_end]
        for after in ARITH_SWAPS.get(op, ()):
            self.add(op_start, op_end, "arith-op", after)
        # Swapping with a literal (`n - 1` -> `1 - n`) is almost never the intended fix; skip it.
        if isinstance(node.op, NON_COMMUTATIVE) and not (_is_literal(node.left) or _is_literal(node.right)):
            self._swap_operands(node, left_end, right_start)

    def _swap_operands(self, node: ast.BinOp, left_end: int, right_start: int) -> None:
        start, end = self.span(node)
        left, middle, right = self.src[start:left_end], self.src[left_end:right_start], self.src[right_start:end]
        if left == right:
            return
        prec = _BINOP_PREC[type(node.op)]
        # Parenthesize an operand whose own precedence would regroup after the swap
        # (e.g. `a - b - c` -> `c - (a - b)`); text already in parens is safe.
        new_left = right if right_start < self.span(node.right)[0] or _prec(node.right) > prec else f"({right})"
        new_right = left if start < self.span(node.left)[0] or _prec(node.left) > prec else f"({left})"
        self.add(start, end, "swap-args", new_left + middle + new_right)

    def _augassign(self, node: ast.AugAssign) -> None:
        found = self.operator_between(self.span(node.target)[1], self.span(node.value)[0])
        if found is None or not found[2].endswith("="):
            return
        for after in ARITH_SWAPS.get(found[2][:-1], ()):
            self.add(found[0], found[1], "arith-op", after + "=")

    def _boolop(self, node: ast.BoolOp) -> None:
        for prev, right in zip(node.values, node.values[1:]):
            found = self.operator_between(self.span(prev)[1], self.span(right)[0])
            if found is not None and found[2] in ("and", "or"):
                self.add(found[0], found[1], "bool-op", "or" if found[2] == "and" else "and")

    def _negate(self, test: ast.expr) -> None:
        if id(test) in self.skip or isinstance(test, ast.Constant):
            return  # `while True` -> `while not True` is never a fix
        start, end = self.span(test)
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            # Remove just the `not` keyword and the space after it, keeping any parens.
            i = bisect.bisect_left(self.token_starts, start)
            if i + 1 < len(self.tokens) and self.tokens[i].string == "not":
                self.add(start, self.tokens[i + 1].start, "negation", "")
            return
        text = self.src[start:end]
        self.add(start, end, "negation", f"not ({text})" if _prec(test) <= _PREC_NOT else f"not {text}")

    def _return(self, value: ast.expr, func: ast.FunctionDef | ast.AsyncFunctionDef | None) -> None:
        start, end = self.span(value)
        if isinstance(value, ast.Constant) and isinstance(value.value, bool):
            self.add(start, end, "return-value", str(not value.value))
            return
        if isinstance(value, ast.Constant) and value.value is None:
            self.add(start, end, "return-value", "-1")  # the other common "not found" sentinel
            return
        if _int_value(value) == -1:
            self.add(start, end, "return-value", "None")
            return
        if isinstance(value, ast.Name):
            if func is not None and value.id in _bool_names(func):
                self.add(start, end, "return-value", f"not {value.id}")
            return
        if _is_boolean_looking(value):
            self._negate(value)

    def _slice(self, node: ast.Slice) -> None:
        start, end = self.span(node)
        for bound in (node.lower, node.upper):
            if bound is None:
                continue
            for delta in (1, -1):
                after = self.plus_minus(bound, delta)
                if after is not None:
                    self.add(*self.span(bound), "slice-bound", after)
            self.add(*self.span(bound), "slice-bound", "")  # drop the bound
        # Add a missing bound: `s[:j]` -> `s[1:j]`, `s[i:]` -> `s[i:-1]`.
        if node.lower is None:
            self.add(start, start, "slice-bound", "1")
        if node.upper is None and node.step is None and self.src[start:end].rstrip().endswith(":"):
            self.add(end, end, "slice-bound", "-1")

    def _call(self, node: ast.Call) -> None:
        if self._is_range_call(node):
            for arg in node.args[:2]:
                for delta in (1, -1):
                    after = self.plus_minus(arg, delta)
                    if after is not None:
                        self.add(*self.span(arg), "range-bound", after)
        for a, b in zip(node.args, node.args[1:]):
            if isinstance(a, ast.Starred) or isinstance(b, ast.Starred):
                continue
            a_start, a_end = self.span(a)
            b_start, b_end = self.span(b)
            a_text, b_text = self.src[a_start:a_end], self.src[b_start:b_end]
            if a_end <= b_start and a_text != b_text:
                self.add(a_start, b_end, "swap-args", b_text + self.src[a_end:b_start] + a_text)

    def _int_literal(self, node: ast.Constant | ast.UnaryOp) -> None:
        if id(node) in self.no_int:
            return
        value = _int_value(node)
        if value is None:
            return
        if isinstance(node, ast.UnaryOp):
            self.no_int.add(id(node.operand))  # `-1` is one literal, not `-(1)`
        start, end = self.span(node)
        for delta in (1, -1):
            self.add(start, end, "off-by-one", str(value + delta))


# -- public API -------------------------------------------------------------


def _parse(source: str, path: str) -> ast.Module:
    try:
        return ast.parse(source, filename=path)
    except SyntaxError as exc:
        raise ToolError(f"syntax error in {path} at line {exc.lineno}: {exc.msg}") from exc
    except ValueError as exc:  # e.g. null bytes
        raise ToolError(f"cannot parse {path}: {exc}") from exc


def find_edits(source: str, path: str = "<source>", limit: int = MAX_EDITS) -> list[dict[str, object]]:
    """Candidate edits for `source`, as the JSON-ready objects `list` prints.

    Sorted by position, then kind, then replacement; edits that do not change
    the text, duplicate another edit's result, or break the syntax are dropped.
    """
    tree = _parse(source, path)
    finder = _Finder(source, tree)
    keyed = []
    for edit in finder.collect():
        keyed.append(((*finder.position(edit.start), *finder.position(edit.end), edit.kind, edit.after), edit))
    keyed.sort(key=lambda pair: pair[0])

    seen: set[str] = set()
    out: list[dict[str, object]] = []
    for (line, col, end_line, end_col, kind, after), edit in keyed:
        if len(out) >= limit:
            break
        before = source[edit.start:edit.end]
        if before == after:
            continue
        result = source[: edit.start] + after + source[edit.end:]
        if result in seen or not finder.is_valid(edit):
            continue
        seen.add(result)
        out.append({
            "id": len(out), "kind": kind, "line": line, "col": col, "end_line": end_line,
            "end_col": end_col, "before": before, "after": after,
        })
    return out


def apply_edit(source: str, edit: dict[str, object]) -> str:
    """Return `source` with one edit object (as produced by find_edits) applied."""
    lines = source.split("\n")
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    start = starts[int(edit["line"]) - 1] + int(edit["col"])  # type: ignore[arg-type]
    end = starts[int(edit["end_line"]) - 1] + int(edit["end_col"])  # type: ignore[arg-type]
    return source[:start] + str(edit["after"]) + source[end:]


# -- CLI --------------------------------------------------------------------

_BOM = "\ufeff"


def _read(path: str) -> str:
    p = Path(path)
    if not p.exists():
        raise ToolError(f"file not found: {path}")
    if not p.is_file():
        raise ToolError(f"not a regular file: {path}")
    try:
        # Decode bytes as-is (no newline translation) so \r\n survives and untouched lines stay byte-identical.
        return p.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(f"file is not valid UTF-8: {path}") from exc
    except OSError as exc:
        raise ToolError(f"cannot read {path}: {exc.strerror}") from exc


def _state_paths(path: str) -> tuple[Path, Path]:
    state_dir = Path(os.environ.get(STATE_DIR_ENV) or DEFAULT_STATE_DIR)
    key = hashlib.sha256(os.path.abspath(path).encode("utf-8")).hexdigest()
    return state_dir / f"{key}.orig", state_dir / f"{key}.path"


def _list(path: str) -> dict[str, object]:
    text = _read(path)
    bom = text.startswith(_BOM)
    return {"file": path, "edits": find_edits(text[1:] if bom else text, path)}


def _apply(path: str, raw_id: str) -> dict[str, object]:
    try:
        edit_id = int(raw_id)
    except ValueError:
        raise ToolError(f"edit id must be an integer, got {raw_id!r}") from None
    text = _read(path)
    bom = _BOM if text.startswith(_BOM) else ""
    body = text[len(bom):]
    edits = find_edits(body, path)
    if not 0 <= edit_id < len(edits):
        ids = f" (ids 0..{len(edits) - 1})" if edits else ""
        raise ToolError(f"edit id {edit_id} out of range: {path} has {len(edits)} candidate edits{ids}")
    edit = edits[edit_id]
    new_body = apply_edit(body, edit)
    _parse(new_body, path)  # belt and braces: never write a file that no longer parses
    orig, meta = _state_paths(path)
    if not orig.exists():  # keep only the pre-first-edit state so revert undoes everything
        try:
            orig.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            orig.write_bytes(text.encode("utf-8"))
            meta.write_text(os.path.abspath(path) + "\n", encoding="utf-8")
        except OSError as exc:
            raise ToolError(f"cannot save original of {path} under {orig.parent}: {exc.strerror}") from exc
    try:
        Path(path).write_bytes((bom + new_body).encode("utf-8"))
    except OSError as exc:
        raise ToolError(f"cannot write {path}: {exc.strerror}") from exc
    return {"applied": edit}


def _revert(path: str) -> dict[str, object]:
    orig, meta = _state_paths(path)
    if not orig.exists():
        return {"reverted": False}
    try:
        Path(path).write_bytes(orig.read_bytes())
    except OSError as exc:
        raise ToolError(f"cannot restore {path}: {exc.strerror}") from exc
    orig.unlink()
    meta.unlink(missing_ok=True)
    return {"reverted": True}


USAGE = "usage: trialrun_repair.py list <file.py> | apply <file.py> <id> | revert <file.py>"


def _fail(message: str) -> NoReturn:
    print(json.dumps({"error": message}))
    sys.exit(2)


def _dispatch(argv: list[str]) -> dict[str, object]:
    if len(argv) == 2 and argv[0] == "list":
        return _list(argv[1])
    if len(argv) == 3 and argv[0] == "apply":
        return _apply(argv[1], argv[2])
    if len(argv) == 2 and argv[0] == "revert":
        return _revert(argv[1])
    raise ToolError(USAGE)


def main(argv: list[str] | None = None) -> int:
    try:
        result = _dispatch(sys.argv[1:] if argv is None else argv)
    except ToolError as exc:
        _fail(str(exc))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

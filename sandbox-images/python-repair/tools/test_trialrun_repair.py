"""Unit tests for trialrun_repair.py (run with: python3 -m pytest this_file)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import trialrun_repair as tr  # noqa: E402

TOOL = Path(tr.__file__).resolve()


def edits(source: str) -> list[dict[str, object]]:
    return tr.find_edits(textwrap.dedent(source))


def results(source: str, kind: str | None = None) -> set[str]:
    """The full texts that the (optionally kind-filtered) edits produce."""
    src = textwrap.dedent(source)
    return {tr.apply_edit(src, e) for e in tr.find_edits(src) if kind is None or e["kind"] == kind}


def pairs(source: str, kind: str) -> set[tuple[object, object]]:
    return {(e["before"], e["after"]) for e in edits(source) if e["kind"] == kind}


# -- one test per kind ---------------------------------------------------------


def test_compare_op() -> None:
    got = pairs("x = a < b\ny = a is not None\nz = k not in d\nw = a == b\n", "compare-op")
    assert {("<", "<="), ("<", ">"), ("<", ">="), ("is not", "is"), ("not in", "in"), ("==", "!=")} <= got


def test_compare_op_in_chain_and_parens() -> None:
    src = "ok = (lo) <= mid < hi\n"
    assert "ok = (lo) < mid < hi\n" in results(src, "compare-op")
    assert "ok = (lo) <= mid <= hi\n" in results(src, "compare-op")


def test_arith_op_including_augmented() -> None:
    got = pairs("x = a + b * c // d % e\ntotal += 1\nn -= step\n", "arith-op")
    assert {("+", "-"), ("*", "+"), ("//", "/"), ("%", "//"), ("+=", "-="), ("-=", "+=")} <= got


def test_bool_op() -> None:
    src = "ok = a and b or c\n"
    assert results(src, "bool-op") == {"ok = a or b or c\n", "ok = a and b and c\n"}


def test_negation_adds_and_removes_not() -> None:
    src = """\
    def f(xs, a, b):
        if xs:
            pass
        while not (a and b):
            pass
        assert a or b
        return a < b
    """
    got = results(src, "negation")
    dedented = textwrap.dedent(src)
    assert dedented.replace("if xs:", "if not xs:") in got
    assert dedented.replace("while not (a and b):", "while (a and b):") in got
    assert dedented.replace("assert a or b", "assert not (a or b)") in got
    assert dedented.replace("return a < b", "return not a < b") in got


def test_negation_skips_non_boolean_returns() -> None:
    assert pairs("def f(a, b):\n    return a + b\n", "negation") == set()


def test_off_by_one_constants() -> None:
    got = pairs("x = xs[0] + 2\ny = -1\n", "off-by-one")
    assert got == {("0", "-1"), ("0", "1"), ("2", "1"), ("2", "3"), ("-1", "-2"), ("-1", "0")}


def test_off_by_one_excludes_range_and_slices_and_bools() -> None:
    src = "for i in range(1, n - 1):\n    s = t[1:-1]\nflag = True\n"
    assert pairs(src, "off-by-one") == set()


def test_slice_bound() -> None:
    got = pairs("a = s[i:j - 1]\nb = s[1:]\nc = s[:n]\n", "slice-bound")
    assert {("i", "i + 1"), ("i", "i - 1"), ("i", ""), ("j - 1", "j"), ("j - 1", "j - 2"), ("j - 1", "")} <= got
    assert {("1", "0"), ("1", "2"), ("", "-1"), ("", "1"), ("n", "n + 1")} <= got


def test_slice_bound_add_upper_and_lower() -> None:
    assert "b = s[1:-1]\n" in results("b = s[1:]\n", "slice-bound")
    assert "c = s[1:n]\n" in results("c = s[:n]\n", "slice-bound")


def test_range_bound_folds_constants() -> None:
    got = pairs("for i in range(len(xs) - 1):\n    pass\nfor j in range(0, n + 1, 2):\n    pass\n", "range-bound")
    assert {("len(xs) - 1", "len(xs)"), ("len(xs) - 1", "len(xs) - 2")} <= got
    assert {("0", "1"), ("0", "-1"), ("n + 1", "n"), ("n + 1", "n + 2")} <= got
    assert not any(before == "2" for before, _ in got)  # the step is left alone


def test_swap_args_calls_and_noncommutative_ops() -> None:
    src = "x = f(a, b, c)\ny = a - b - c\nz = p + q\n"
    got = results(src, "swap-args")
    assert "x = f(b, a, c)\ny = a - b - c\nz = p + q\n" in got
    assert "x = f(a, c, b)\ny = a - b - c\nz = p + q\n" in got
    assert "x = f(a, b, c)\ny = c - (a - b)\nz = p + q\n" in got  # parens keep the grouping
    assert "x = f(a, b, c)\ny = b - a - c\nz = p + q\n" in got
    assert not any("q + p" in r for r in got)  # + is commutative: no swap


def test_swap_args_skips_literal_operands() -> None:
    assert pairs("y = n - 1\nz = 2 ** k\nw = 'x' % v\n", "swap-args") == set()


def test_negation_skips_constant_conditions() -> None:
    assert pairs("while True:\n    break\n", "negation") == set()


def test_swap_args_keeps_existing_parens() -> None:
    assert "y = (b) - (a + 1)\n" in results("y = (a + 1) - (b)\n", "swap-args")


def test_return_value() -> None:
    src = """\
    def f(x):
        found = x > 0
        if x:
            return True
        if found:
            return found
        if x is None:
            return None
        return -1
    """
    got = pairs(src, "return-value")
    assert got == {("True", "False"), ("found", "not found"), ("None", "-1"), ("-1", "None")}


# -- properties of the whole list ----------------------------------------------

SAMPLE = '''\
"""Module docstring mentioning 1 < 2 and a + b."""


def search(xs: list[int], target: int) -> int:
    """Binary search; 0 <= result < len(xs)."""
    lo, hi = 0, len(xs) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if xs[mid] == target:
            return mid
        if xs[mid] < target:
            lo = mid + 1
        else:
            hi = mid - 1
    return -1


def pairs(s: str, k: int) -> list[str]:
    out = [s[i:i + k] for i in range(len(s) - k + 1) if s[i] != " " and k > 0]
    print(f"{k + 1}", max(k, 2 - k))
    return out
'''


def test_every_edit_parses_and_is_distinct() -> None:
    found = tr.find_edits(SAMPLE)
    assert found, "expected candidate edits"
    texts = [tr.apply_edit(SAMPLE, e) for e in found]
    assert len(set(texts)) == len(texts)
    for text in texts:
        assert text != SAMPLE
        ast.parse(text)
    assert {e["kind"] for e in found} <= set(tr.KINDS)


def test_edits_touch_exactly_their_span() -> None:
    lines = SAMPLE.split("\n")
    for e in tr.find_edits(SAMPLE):
        if e["line"] == e["end_line"]:
            assert lines[e["line"] - 1][e["col"]:e["end_col"]] == e["before"]


def test_deterministic_order_and_ids() -> None:
    first, second = tr.find_edits(SAMPLE), tr.find_edits(SAMPLE)
    assert first == second
    assert [e["id"] for e in first] == list(range(len(first)))
    keys = [(e["line"], e["col"], e["end_line"], e["end_col"], e["kind"], e["after"]) for e in first]
    assert keys == sorted(keys)


def test_no_edits_inside_docstrings_or_fstrings() -> None:
    found = tr.find_edits(SAMPLE)
    assert not any(e["line"] in (1, 5) for e in found)
    fstring_line = next(i for i, l in enumerate(SAMPLE.split("\n"), 1) if 'f"' in l)
    col = SAMPLE.split("\n")[fstring_line - 1].index('f"')
    assert not any(e["line"] == fstring_line and col < e["col"] < col + 10 for e in found)


def test_validation_handles_elif_and_inline_blocks() -> None:
    # Edits are validated by re-parsing the enclosing statement; these forms need care.
    src = """\
    @decorate(1, 2)
    def f(a, b, c):
        if a:
            pass
        elif b < c:
            pass
        else: x = b - c
        try: v = g(a, b)
        finally: pass
    """
    got = results(src)
    dedented = textwrap.dedent(src)
    for old, new in [("elif b < c", "elif b <= c"), ("else: x = b - c", "else: x = c - b"),
                     ("g(a, b)", "g(b, a)"), ("@decorate(1, 2)", "@decorate(2, 1)")]:
        assert dedented.replace(old, new) in got


def test_list_is_capped() -> None:
    big = "".join(f"x{i} = a{i} < b{i} + {i}\n" for i in range(200))
    assert len(tr.find_edits(big)) == tr.MAX_EDITS


def test_non_ascii_columns_are_characters() -> None:
    src = "s = 'héllo' if a < b else 'ü'\n"
    edit = next(e for e in tr.find_edits(src) if e["kind"] == "compare-op" and e["after"] == "<=")
    assert src[edit["col"]:edit["end_col"]] == "<"
    assert tr.apply_edit(src, edit) == "s = 'héllo' if a <= b else 'ü'\n"


# -- CLI ------------------------------------------------------------------------


def run(*args: str, state: Path) -> tuple[int, dict[str, object]]:
    proc = subprocess.run(
        [sys.executable, str(TOOL), *args],
        capture_output=True, text=True, env={"TRIALRUN_REPAIR_STATE_DIR": str(state), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    return proc.returncode, json.loads(proc.stdout)


@pytest.fixture
def module(tmp_path: Path) -> Path:
    path = tmp_path / "work" / "mod.py"
    path.parent.mkdir()
    path.write_text(SAMPLE, encoding="utf-8")
    return path


def test_cli_list_shape(module: Path, tmp_path: Path) -> None:
    rc, out = run("list", str(module), state=tmp_path / "state")
    assert rc == 0
    assert out["file"] == str(module)
    assert out["edits"] == tr.find_edits(SAMPLE)
    assert list(out["edits"][0]) == ["id", "kind", "line", "col", "end_line", "end_col", "before", "after"]


def test_cli_apply_revert_round_trip(module: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    _, listed = run("list", str(module), state=state)
    target = next(e for e in listed["edits"] if e["kind"] == "compare-op")
    rc, out = run("apply", str(module), str(target["id"]), state=state)
    assert rc == 0 and out == {"applied": target}
    assert module.read_text(encoding="utf-8") == tr.apply_edit(SAMPLE, target)
    assert not any(p.is_relative_to(module.parent) for p in state.iterdir())  # backups live outside the workspace

    # A second apply edits the current file, but revert still restores the original.
    rc, _ = run("apply", str(module), "0", state=state)
    assert rc == 0 and module.read_text(encoding="utf-8") != SAMPLE
    assert run("revert", str(module), state=state) == (0, {"reverted": True})
    assert module.read_text(encoding="utf-8") == SAMPLE
    assert run("revert", str(module), state=state) == (0, {"reverted": False})


def test_cli_preserves_crlf_and_other_lines(tmp_path: Path) -> None:
    path = tmp_path / "crlf.py"
    original = b"def f(a, b):\r\n    # keep me\r\n    return a < b\r\n"
    path.write_bytes(original)
    state = tmp_path / "state"
    _, listed = run("list", str(path), state=state)
    target = next(e for e in listed["edits"] if e["after"] == "<=")
    run("apply", str(path), str(target["id"]), state=state)
    assert path.read_bytes() == original.replace(b"a < b", b"a <= b")
    run("revert", str(path), state=state)
    assert path.read_bytes() == original


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("list", "{missing}"), "file not found"),
        (("list", "{bad}"), "syntax error"),
        (("apply", "{good}", "9999"), "out of range"),
        (("apply", "{good}", "-1"), "out of range"),
        (("apply", "{good}", "two"), "must be an integer"),
        (("frobnicate", "{good}"), "usage"),
        ((), "usage"),
    ],
)
def test_cli_errors(tmp_path: Path, args: tuple[str, ...], fragment: str) -> None:
    good = tmp_path / "good.py"
    good.write_text("x = 1 + 2\n", encoding="utf-8")
    bad = tmp_path / "bad.py"
    bad.write_text("def f(:\n", encoding="utf-8")
    paths = {"missing": str(tmp_path / "nope.py"), "bad": str(bad), "good": str(good)}
    rc, out = run(*(a.format(**paths) for a in args), state=tmp_path / "state")
    assert rc == 2
    assert list(out) == ["error"] and fragment in str(out["error"])
    assert good.read_text(encoding="utf-8") == "x = 1 + 2\n"  # failed applies change nothing

#!/usr/bin/env python3
"""Check a program-repair task bundle (one JSON task per line).

    python3 tasks/check_bundle.py tasks/repair-bundle.jsonl [--tool PATH] [--jobs N]

For every task, in a fresh temporary directory, this verifies that:
  * the record has the expected fields, a well-formed unique id and a sane module name;
  * both sources parse, the module is small (10-40 lines, 1-3 top-level definitions);
  * the tests import the module by name, avoid nondeterministic/networked modules, and the
    hidden tests are more thorough (more test functions) than the visible ones;
  * `fixed_source` is `buggy_source` with exactly ONE edit from `trialrun_repair.py list`
    applied (checked through the real CLI, including apply/revert), and the first tag names
    that edit's kind;
  * `fixed_source` passes all visible and hidden tests, `buggy_source` fails a hidden test.
Bundle-wide it checks the task count, that every edit kind is used, and that most (not all)
tasks have visible tests that catch the bug.

Prints one line per task, bundle statistics, and `N passed, N failed`; exits 1 on any failure.
Needs pytest importable by the running interpreter; otherwise stdlib only.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TOOL = REPO_ROOT / "sandbox-images" / "python-repair" / "tools" / "trialrun_repair.py"

# The one list of edit kinds, shipped beside the edit tool.
KINDS = frozenset(json.loads((DEFAULT_TOOL.parent / "edit_kinds.json").read_text(encoding="utf-8"))["kinds"])
FIELDS: dict[str, type] = {
    "id": str, "title": str, "description": str, "module": str, "buggy_source": str,
    "fixed_source": str, "visible_tests": str, "hidden_tests": str, "tags": list,
}
ID_RE = re.compile(r"^repair-\d{3}-[a-z0-9]+(?:-[a-z0-9]+)*$")
MODULE_RE = re.compile(r"^[a-z_][a-z0-9_]*\.py$")
# Tests must be deterministic, fast and offline; these imports suggest otherwise.
FORBIDDEN_TEST_IMPORTS = frozenset({
    "random", "time", "socket", "subprocess", "threading", "multiprocessing", "asyncio",
    "urllib", "http", "requests", "datetime",
})
MIN_LINES, MAX_LINES = 10, 40
MIN_TASKS = 24
VISIBLE_CATCH_RANGE = (0.6, 0.9)  # "about 3/4" of tasks: some, but not all, hidden-only
TOOL_TIMEOUT_S = 30
PYTEST_TIMEOUT_S = 120
SLOW_TESTS_S = 20  # generous: includes interpreter start-up on a busy machine


@dataclass
class Result:
    task_id: str
    errors: list[str] = field(default_factory=list)
    n_edits: int | None = None
    fix_id: int | None = None
    fix_kind: str | None = None
    visible_catches: bool | None = None

    @property
    def ok(self) -> bool:
        return not self.errors


# -- static checks ----------------------------------------------------------------


def check_fields(task: dict[str, object], res: Result) -> bool:
    for name, typ in FIELDS.items():
        if not isinstance(task.get(name), typ):
            res.errors.append(f"field {name!r} missing or not a {typ.__name__}")
    if res.errors:
        return False
    if not ID_RE.match(str(task["id"])):
        res.errors.append(f"id {task['id']!r} does not match repair-NNN-<slug>")
    module = str(task["module"])
    stem = module[:-3]
    if not MODULE_RE.match(module) or stem.startswith("test"):
        res.errors.append(f"module {module!r} is not a plain lowercase <name>.py")
    elif stem in sys.stdlib_module_names:
        res.errors.append(f"module {module!r} would shadow the standard library")
    tags = task["tags"]
    if not tags or not all(isinstance(t, str) for t in tags) or tags[0] not in KINDS:  # type: ignore[union-attr]
        res.errors.append(f"tags must start with one of {sorted(KINDS)}, got {tags!r}")
    if task["buggy_source"] == task["fixed_source"]:
        res.errors.append("buggy_source equals fixed_source")
    return not res.errors


def parse(source: str, label: str, res: Result) -> ast.Module | None:
    try:
        return ast.parse(source)
    except SyntaxError as exc:
        res.errors.append(f"{label} does not parse: line {exc.lineno}: {exc.msg}")
        return None


def test_function_count(tree: ast.Module) -> int:
    return sum(isinstance(n, ast.FunctionDef) and n.name.startswith("test") for n in tree.body)


WRITE_CALLS = frozenset({"open", "write_text", "write_bytes", "mkdir", "unlink", "rmdir", "remove", "rename"})


def file_writes_outside_tmp_path(tree: ast.Module) -> list[str]:
    """Test functions that touch the filesystem without taking pytest's tmp_path fixture."""
    bad = []
    for fn in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
        if "tmp_path" in {a.arg for a in fn.args.args}:
            continue
        for call in (n for n in ast.walk(fn) if isinstance(n, ast.Call)):
            name = call.func.id if isinstance(call.func, ast.Name) else getattr(call.func, "attr", "")
            if name in WRITE_CALLS:
                bad.append(fn.name)
                break
    return bad


def check_static(task: dict[str, object], res: Result) -> None:
    stem = str(task["module"])[:-3]
    fixed = parse(str(task["fixed_source"]), "fixed_source", res)
    parse(str(task["buggy_source"]), "buggy_source", res)
    if fixed is not None:
        lines = len(str(task["fixed_source"]).splitlines())
        if not MIN_LINES <= lines <= MAX_LINES:
            res.errors.append(f"module has {lines} lines, want {MIN_LINES}-{MAX_LINES}")
        defs = sum(isinstance(n, (ast.FunctionDef, ast.ClassDef)) for n in fixed.body)
        if not 1 <= defs <= 3:
            res.errors.append(f"module has {defs} top-level functions/classes, want 1-3")
    counts = {}
    for label in ("visible_tests", "hidden_tests"):
        tree = parse(str(task[label]), label, res)
        if tree is None:
            continue
        counts[label] = test_function_count(tree)
        if counts[label] == 0:
            res.errors.append(f"{label} defines no test functions")
        if not any(isinstance(n, ast.ImportFrom) and n.module == stem for n in ast.walk(tree)):
            res.errors.append(f"{label} does not import from {stem!r}")
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module.split(".")[0]]
            bad = FORBIDDEN_TEST_IMPORTS.intersection(names)
            if bad:
                res.errors.append(f"{label} imports {sorted(bad)} (tests must be deterministic and offline)")
        for name in file_writes_outside_tmp_path(tree):
            res.errors.append(f"{label}: {name} touches files without using tmp_path")
    if len(counts) == 2 and counts["hidden_tests"] <= counts["visible_tests"]:
        res.errors.append(
            f"hidden tests ({counts['hidden_tests']}) should outnumber visible ones ({counts['visible_tests']})")


# -- the one-edit property, through the real tool ------------------------------------


def run_tool(tool: Path, args: list[str], state_dir: Path) -> tuple[int, dict[str, object] | None, str]:
    env = {**os.environ, "TRIALRUN_REPAIR_STATE_DIR": str(state_dir), "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run([sys.executable, str(tool), *args], capture_output=True, text=True,
                          env=env, timeout=TOOL_TIMEOUT_S, check=False)
    try:
        return proc.returncode, json.loads(proc.stdout), proc.stderr
    except json.JSONDecodeError:
        return proc.returncode, None, proc.stdout + proc.stderr


def splice(source: str, edit: dict[str, object]) -> tuple[str, str]:
    """Apply an edit from its reported coordinates; returns (text at span, new source).

    Done here rather than via the tool's own helper, so the reported positions are checked too.
    """
    starts = [0]
    for line in source.split("\n")[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    start = starts[int(edit["line"]) - 1] + int(edit["col"])  # type: ignore[arg-type]
    end = starts[int(edit["end_line"]) - 1] + int(edit["end_col"])  # type: ignore[arg-type]
    return source[start:end], source[:start] + str(edit["after"]) + source[end:]


def check_one_edit(task: dict[str, object], tool: Path, work: Path, res: Result) -> None:
    buggy, fixed = str(task["buggy_source"]), str(task["fixed_source"])
    tool_dir, state = work / "tool", work / "state"
    tool_dir.mkdir()
    path = tool_dir / str(task["module"])
    path.write_text(buggy, encoding="utf-8")

    rc, out, err = run_tool(tool, ["list", str(path)], state)
    if rc != 0 or out is None or not isinstance(out.get("edits"), list):
        res.errors.append(f"tool list failed (rc={rc}): {out or err.strip()[:200]}")
        return
    edits: list[dict[str, object]] = out["edits"]  # type: ignore[assignment]
    res.n_edits = len(edits)
    if [e.get("id") for e in edits] != list(range(len(edits))):
        res.errors.append("tool ids are not 0..n-1")
    fixing = []
    for edit in edits:
        before, result = splice(buggy, edit)
        if before != edit["before"]:
            res.errors.append(f"edit {edit['id']}: 'before' {edit['before']!r} != text at its span {before!r}")
        if result == fixed:
            fixing.append(edit)
        try:
            ast.parse(result)
        except SyntaxError:
            res.errors.append(f"edit {edit['id']} yields invalid Python")
    if len(fixing) != 1:
        res.errors.append(f"{len(fixing)} candidate edits turn buggy_source into fixed_source, want exactly 1")
        return
    fix = fixing[0]
    res.fix_id, res.fix_kind = int(fix["id"]), str(fix["kind"])  # type: ignore[arg-type]
    tags = task["tags"]
    if tags[0] != res.fix_kind:  # type: ignore[index]
        res.errors.append(f"first tag {tags[0]!r} but the fixing edit is {res.fix_kind!r}")  # type: ignore[index]

    # Exercise apply/revert exactly as the agent would.
    rc, out, err = run_tool(tool, ["apply", str(path), str(res.fix_id)], state)
    if rc != 0 or out != {"applied": fix} or path.read_text(encoding="utf-8") != fixed:
        res.errors.append(f"tool apply {res.fix_id} did not produce fixed_source (rc={rc}): {out or err[:200]}")
    rc, out, err = run_tool(tool, ["revert", str(path)], state)
    if rc != 0 or out != {"reverted": True} or path.read_text(encoding="utf-8") != buggy:
        res.errors.append(f"tool revert did not restore buggy_source (rc={rc}): {out or err[:200]}")


# -- behaviour under pytest ---------------------------------------------------------


FAILED_RE = re.compile(r"^(FAILED|ERROR) (test_\w+)\.py")


def run_pytest(run_dir: Path, module: str, source: str) -> tuple[int, str, set[str], set[str]]:
    """Run both test files against `source`: (rc, last line, files with FAILED, files with ERROR)."""
    (run_dir / module).write_text(source, encoding="utf-8")
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0", "PYTHONPATH": str(run_dir)}
    cmd = [sys.executable, "-m", "pytest", "-q", "-rfE", "-p", "no:cacheprovider", "--rootdir", str(run_dir),
           "-c", str(run_dir / "pytest.ini"), "test_visible.py", "test_hidden.py"]
    started = time.monotonic()
    try:
        proc = subprocess.run(cmd, cwd=run_dir, capture_output=True, text=True, env=env,
                              timeout=PYTEST_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return -1, f"timed out after {PYTEST_TIMEOUT_S}s", set(), set()
    if time.monotonic() - started > SLOW_TESTS_S:
        return -1, f"took over {SLOW_TESTS_S}s (tests must be fast)", set(), set()
    lines = (proc.stdout + proc.stderr).strip().splitlines()
    failed: set[str] = set()
    errored: set[str] = set()
    for line in lines:
        m = FAILED_RE.match(line)
        if m:
            (failed if m.group(1) == "FAILED" else errored).add(m.group(2))
    return proc.returncode, lines[-1] if lines else "", failed, errored


def check_behaviour(task: dict[str, object], work: Path, res: Result) -> None:
    run_dir = work / "run"
    run_dir.mkdir()
    (run_dir / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")  # isolate from outer configs
    (run_dir / "test_visible.py").write_text(str(task["visible_tests"]), encoding="utf-8")
    (run_dir / "test_hidden.py").write_text(str(task["hidden_tests"]), encoding="utf-8")
    module = str(task["module"])

    # pytest exit codes: 0 all passed, 1 some test failed; anything else is a broken setup.
    rc, summary, _, _ = run_pytest(run_dir, module, str(task["fixed_source"]))
    if rc != 0:
        res.errors.append(f"fixed_source does not pass all tests (pytest rc={rc}: {summary})")
    rc, summary, failed, errored = run_pytest(run_dir, module, str(task["buggy_source"]))
    if rc != 1 or errored:
        # A bug must show up as failing assertions, not as an import/collection/fixture error.
        res.errors.append(f"buggy_source should fail tests cleanly (pytest rc={rc}: {summary})")
        return
    if "test_hidden" not in failed:
        res.errors.append("buggy_source passes every hidden test")
    res.visible_catches = "test_visible" in failed


def check_task(task: dict[str, object], tool: Path) -> Result:
    res = Result(str(task.get("id", "<no id>")))
    if not check_fields(task, res):
        return res
    check_static(task, res)
    with tempfile.TemporaryDirectory(prefix="repair-check-") as tmp:
        work = Path(tmp)
        try:
            check_one_edit(task, tool, work, res)
            check_behaviour(task, work, res)
        except subprocess.TimeoutExpired as exc:
            res.errors.append(f"timed out: {exc.cmd}")
    return res


# -- driver ------------------------------------------------------------------------


def load(path: Path) -> tuple[list[dict[str, object]], list[str]]:
    tasks, errors = [], []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            errors.append(f"line {n}: invalid JSON: {exc.msg}")
            continue
        if not isinstance(obj, dict):
            errors.append(f"line {n}: not a JSON object")
            continue
        tasks.append(obj)
    return tasks, errors


def bundle_errors(tasks: list[dict[str, object]], results: list[Result]) -> list[str]:
    errors = []
    if len(tasks) < MIN_TASKS:
        errors.append(f"only {len(tasks)} tasks, want at least {MIN_TASKS}")
    missing = KINDS - {r.fix_kind for r in results}
    if missing:
        errors.append(f"no task exercises {sorted(missing)}")
    judged = [r.visible_catches for r in results if r.visible_catches is not None]
    if judged:
        share = sum(judged) / len(judged)
        lo, hi = VISIBLE_CATCH_RANGE
        if not lo <= share <= hi:
            errors.append(f"visible tests catch the bug in {share:.0%} of tasks, want {lo:.0%}-{hi:.0%}")
    return errors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bundle", type=Path)
    parser.add_argument("--tool", type=Path, default=DEFAULT_TOOL, help="path to trialrun_repair.py")
    parser.add_argument("--jobs", type=int, default=min(8, os.cpu_count() or 1))
    args = parser.parse_args(argv)
    try:
        import pytest  # noqa: F401  (the checks shell out to `python -m pytest`)
    except ImportError:
        print("error: pytest is not importable by this interpreter (pip install pytest)", file=sys.stderr)
        return 2
    if not args.tool.is_file():
        print(f"error: tool not found: {args.tool}", file=sys.stderr)
        return 2

    tasks, load_errors = load(args.bundle)
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(lambda t: check_task(t, args.tool), tasks))
    seen: set[str] = set()
    for res in results:
        if res.task_id in seen:
            res.errors.append(f"duplicate id {res.task_id}")
        seen.add(res.task_id)

    for res in results:
        catches = {None: "?", True: "yes", False: "no"}[res.visible_catches]
        print(f"{'PASS' if res.ok else 'FAIL'} {res.task_id}: edits={res.n_edits} fix_id={res.fix_id}"
              f" kind={res.fix_kind} visible_catches={catches}")
        for err in res.errors:
            print(f"    - {err}")

    problems = load_errors + bundle_errors(tasks, results)
    kinds: dict[str, int] = {}
    for res in results:
        if res.fix_kind:
            kinds[res.fix_kind] = kinds.get(res.fix_kind, 0) + 1
    counts = [r.n_edits for r in results if r.n_edits is not None]
    print(f"kinds: {', '.join(f'{k}={v}' for k, v in sorted(kinds.items()))}")
    if counts:
        print(f"candidate edits: min={min(counts)} median={statistics.median(counts):g} max={max(counts)}")
    print(f"visible tests catch the bug: {sum(bool(r.visible_catches) for r in results)}/{len(results)}")
    for problem in problems:
        print(f"BUNDLE FAIL: {problem}")

    passed = sum(r.ok for r in results)
    failed = len(results) - passed
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or problems else 0


if __name__ == "__main__":
    sys.exit(main())

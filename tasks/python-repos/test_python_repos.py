"""Consistency of the python-repos task set: for every task, on its starting tree plus hidden tests every
`failToPass` id fails and every `passToPass` id passes, the agent-visible tests all pass (the bug shows only in
hidden tests), and with the reference solution laid over all of them pass. The solution only changes package
modules the workspace already has, never a test. Run with: python3 -m pytest tasks/python-repos"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
TASKS = sorted(path.parent for path in HERE.glob("*/task.json"))


def outcomes(tree: Path) -> dict[str, bool]:
    """Every test pytest ran in the tree, by node id (`tests/hidden/test_x.py::test_y`), and whether it passed."""
    report = tree / "report.xml"
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}"], cwd=tree, capture_output=True, check=False)
    found: dict[str, bool] = {}
    for case in ET.parse(report).iter("testcase"):
        path = case.get("classname", "").replace(".", "/") + ".py"
        found[f"{path}::{case.get('name')}"] = not any(child.tag in ("failure", "error", "skipped") for child in case)
    return found


def lay_out(task: Path, into: Path, *parts: str) -> None:
    for part in parts:
        shutil.copytree(task / part, into, dirs_exist_ok=True)


def files(root: Path) -> set[str]:
    return {path.relative_to(root).as_posix() for path in root.rglob("*") if path.is_file()}


@pytest.mark.parametrize("task", TASKS, ids=[task.name for task in TASKS])
def test_buggy_tree_fails_and_reference_passes(task: Path, tmp_path: Path) -> None:
    spec = json.loads((task / "task.json").read_text())
    check = spec["verification"]["check"]
    assert spec["id"] == f"python-repos-{task.name}"
    assert check["failToPass"] and check["passToPass"]
    buggy = tmp_path / "buggy"
    lay_out(task, buggy, "workspace", "hidden")
    before = outcomes(buggy)
    for test_id in check["failToPass"]:
        assert before.get(test_id) is False, f"{test_id} should fail before the fix, got {before.get(test_id)}"
    for test_id in check["passToPass"]:
        assert before.get(test_id) is True, f"{test_id} should pass before the fix, got {before.get(test_id)}"
    assert set(before) == set(check["failToPass"]) | set(check["passToPass"]), "every test the tree holds is listed"
    assert not [test_id for test_id in check["failToPass"] if not test_id.startswith("tests/hidden/")], "a visible test fails on the starting tree"
    fixed = tmp_path / "fixed"
    lay_out(task, fixed, "workspace", "hidden", "solution")
    after = outcomes(fixed)
    for test_id in check["failToPass"] + check["passToPass"]:
        assert after.get(test_id) is True, f"{test_id} should pass with the reference solution, got {after.get(test_id)}"


@pytest.mark.parametrize("task", TASKS, ids=[task.name for task in TASKS])
def test_each_task_is_a_package_of_several_modules(task: Path) -> None:
    workspace = files(task / "workspace")
    modules = [path for path in workspace if path.endswith(".py") and not path.startswith("tests/")]
    packages = {path.split("/")[0] for path in modules}
    assert len(packages) == 1 and len(modules) >= 4, f"one package of several modules (its __init__.py and 3+ more), got {modules}"
    solution = files(task / "solution")
    assert solution and solution <= workspace, f"the solution changes existing package modules only, got {solution - workspace}"
    assert not [path for path in solution if path.startswith("tests/")]
    assert all(re.fullmatch(r"tests/hidden/test_\w+_hidden\.py", path) for path in files(task / "hidden"))


def test_every_folder_is_a_task() -> None:
    folders = [path for path in HERE.iterdir() if path.is_dir() and not path.name.startswith((".", "__"))]
    assert sorted(folders) == TASKS
    assert len(TASKS) >= 20

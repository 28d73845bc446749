"""Consistency of the workspace-mini task set: for every task, on its starting tree plus hidden tests every
`failToPass` id fails and every `passToPass` id passes; with the reference solution laid over, all of them pass.
Run with: python3 -m pytest tasks/workspace-mini"""

from __future__ import annotations

import json
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


@pytest.mark.parametrize("task", TASKS, ids=[task.name for task in TASKS])
def test_buggy_tree_fails_and_reference_passes(task: Path, tmp_path: Path) -> None:
    spec = json.loads((task / "task.json").read_text())["verification"]["check"]
    assert spec["failToPass"] and spec["passToPass"]
    buggy = tmp_path / "buggy"
    lay_out(task, buggy, "workspace", "hidden")
    before = outcomes(buggy)
    for test_id in spec["failToPass"]:
        assert before.get(test_id) is False, f"{test_id} should fail before the fix, got {before.get(test_id)}"
    for test_id in spec["passToPass"]:
        assert before.get(test_id) is True, f"{test_id} should pass before the fix, got {before.get(test_id)}"
    fixed = tmp_path / "fixed"
    lay_out(task, fixed, "workspace", "hidden", "solution")
    after = outcomes(fixed)
    for test_id in spec["failToPass"] + spec["passToPass"]:
        assert after.get(test_id) is True, f"{test_id} should pass with the reference solution, got {after.get(test_id)}"


def test_every_folder_is_a_task() -> None:
    assert len(TASKS) == 5

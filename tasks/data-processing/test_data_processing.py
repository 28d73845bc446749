"""Consistency of the data-processing task set. For every task, run as its verification runs it (the hidden inputs
laid over the workspace, then the task's command): the reference solution writes exactly the hidden expected
output; the starting script does not (it fails, writes nothing, or writes something else); and the reference run on
the visible sample inputs gives a different output, so an agent that hard-codes what it can compute in its sandbox
fails. Run with: python3 -m pytest tasks/data-processing"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
TASKS = sorted(path.parent for path in HERE.glob("*/task.json"))


def spec_of(task: Path) -> dict:
    return json.loads((task / "task.json").read_text())


def lay_out(task: Path, into: Path, *parts: str) -> Path:
    for part in parts:
        shutil.copytree(task / part, into, dirs_exist_ok=True)
    return into


def run_check(task: Path, tree: Path) -> tuple[subprocess.CompletedProcess, dict[str, str | None]]:
    """Runs the verification's command in `tree`, then reads every check's target (None when absent)."""
    check = spec_of(task)["verification"]["check"]
    done = subprocess.run(check["command"], cwd=tree, capture_output=True, text=True, timeout=60, check=False)
    produced: dict[str, str | None] = {}
    for item in check["checks"]:
        target = tree / item["path"] if "path" in item else None
        produced[item.get("path", "stdout")] = done.stdout if target is None else (target.read_text() if target.exists() else None)
    return done, produced


def expected_of(task: Path) -> dict[str, str]:
    check = spec_of(task)["verification"]["check"]
    return {item.get("path", "stdout"): (task / "hidden" / item["expectedFile"]).read_text() for item in check["checks"]}


def test_the_set_has_ten_tasks_each_an_output_check_of_a_command() -> None:
    assert len(TASKS) >= 10
    for task in TASKS:
        spec = spec_of(task)
        check = spec["verification"]["check"]
        assert spec["id"] == f"data-{task.name}"
        assert check["kind"] == "output" and check["command"][0] == "python3"
        assert all("expectedFile" in item for item in check["checks"]), task.name


@pytest.mark.parametrize("task", TASKS, ids=[task.name for task in TASKS])
def test_hidden_inputs_replace_sample_inputs_and_expected_files_never_reach_the_sandbox(task: Path) -> None:
    hidden = {path.relative_to(task / "hidden").as_posix() for path in (task / "hidden").rglob("*") if path.is_file()}
    inputs = {path for path in hidden if not path.startswith("expected/")}
    assert inputs, "the grading must run on hidden inputs"
    for path in inputs:
        sample = task / "workspace" / path
        assert sample.exists(), f"{path} replaces no sample input"
        assert sample.read_text() != (task / "hidden" / path).read_text(), f"{path} is the same as the sample"
    assert not any(p.relative_to(task / "workspace").as_posix().startswith("expected/") for p in (task / "workspace").rglob("*"))


@pytest.mark.parametrize("task", TASKS, ids=[task.name for task in TASKS])
def test_reference_writes_the_expected_output_on_hidden_inputs(task: Path, tmp_path: Path) -> None:
    done, produced = run_check(task, lay_out(task, tmp_path, "workspace", "hidden", "solution"))
    assert done.returncode == 0, done.stderr
    assert produced == expected_of(task)


@pytest.mark.parametrize("task", TASKS, ids=[task.name for task in TASKS])
def test_starting_script_does_not(task: Path, tmp_path: Path) -> None:
    done, produced = run_check(task, lay_out(task, tmp_path, "workspace", "hidden"))
    expected = expected_of(task)
    assert done.returncode != 0 or any(produced[target] != expected[target] for target in expected), "the starting script already solves the task"


@pytest.mark.parametrize("task", TASKS, ids=[task.name for task in TASKS])
def test_a_hard_coded_output_of_the_sample_inputs_is_wrong(task: Path, tmp_path: Path) -> None:
    done, produced = run_check(task, lay_out(task, tmp_path, "workspace", "solution"))
    assert done.returncode == 0, done.stderr
    expected = expected_of(task)
    assert all(produced[target] != expected[target] for target in expected)

"""Consistency of the document task set: every check reads a file the reference solution provides, which differs from
the starting file at that path (or there is none); the reference's JSON documents parse and no schema is empty; a
file a check compares with is among the hidden files, and never in the workspace. Whether each check passes on the reference and fails on the starting files is decided by the verifier
itself (`trialrun verify calibrate tasks/documents/job.yaml`, test/integration/task-sets.test.ts).
Run with: python3 -m pytest tasks/documents"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
TASKS = sorted(path.parent for path in HERE.glob("*/task.json"))
CHECK_TYPES = {"json-schema", "yaml-schema", "markdown", "csv", "json", "content"}


def spec_of(task: Path) -> dict:
    return json.loads((task / "task.json").read_text())


def test_the_set_has_ten_tasks_of_output_checks_without_a_command() -> None:
    assert len(TASKS) >= 10
    for task in TASKS:
        spec = spec_of(task)
        assert spec["id"] == f"doc-{task.name}"
        check = spec["verification"]["check"]
        assert check["kind"] == "output" and "command" not in check, task.name
        assert {item["type"] for item in check["checks"]} <= CHECK_TYPES


@pytest.mark.parametrize("task", TASKS, ids=[task.name for task in TASKS])
def test_every_checked_file_is_changed_by_the_reference(task: Path) -> None:
    for item in spec_of(task)["verification"]["check"]["checks"]:
        solution = task / "solution" / item["path"]
        assert solution.is_file(), f"the reference lacks {item['path']}"
        start = task / "workspace" / item["path"]
        assert not start.exists() or start.read_text() != solution.read_text(), f"{item['path']} is already solved"


@pytest.mark.parametrize("task", TASKS, ids=[task.name for task in TASKS])
def test_documents_and_schemas_parse_and_expected_files_stay_hidden(task: Path) -> None:
    for item in spec_of(task)["verification"]["check"]["checks"]:
        if item["type"] in ("json-schema", "yaml-schema"):
            assert isinstance(item["schema"], dict) and item["schema"], "an empty schema accepts anything"
        if item["type"] == "json-schema":
            json.loads((task / "solution" / item["path"]).read_text())
        if "expectedFile" in item:
            assert (task / "hidden" / item["expectedFile"]).is_file()
            assert not (task / "workspace" / item["expectedFile"]).exists()

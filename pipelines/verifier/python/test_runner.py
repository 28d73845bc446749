"""Tests of the verification runner (`runner.py`) outside a sandbox: its setup mode, and that it kills what a
test run leaves behind with the sandbox executor's own kill (`agent.py`), the one process-tree kill."""

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
EXECUTOR = os.path.join(ROOT, "sandbox-images", "python-repair", "agent", "agent.py")


def _source(name):
    with open(os.path.join(HERE, name)) as handle:
        return handle.read()


def _run(workspace, mode, agent_files, task_files, tests, timeout_s=60):
    nonce = "n" * 32
    job = {
        "nonce": nonce,
        "mode": mode,
        "timeoutS": 30,
        "allowConftest": False,
        "agentFiles": agent_files,
        "agentEscapedFiles": [],
        "agentSymlinks": [],
        "ownModules": ["calc.py"],
        "taskFiles": task_files,
        "tests": tests,
        "executor": EXECUTOR,
        "runner": _source("runner.py"),
        "witness": _source("witness.py"),
        "strict": _source("strict.py"),
    }
    done = subprocess.run([sys.executable, "-I", "-c", _source("bootstrap.py")], input=json.dumps(job), capture_output=True, text=True, cwd=workspace, timeout=timeout_s)
    line = next(l for l in done.stdout.splitlines() if l.startswith(nonce))
    return json.loads(line[len(nonce) :])


def test_setup_mode_writes_the_files_and_runs_nothing(tmp_path):
    result = _run(tmp_path, "setup", {"calc.py": "X = 1\n", "json.py": "shadow = True\n"}, {"tests/test_calc.py": "def test_x():\n    assert 1\n"}, [])
    assert (tmp_path / "calc.py").read_text() == "X = 1\n"
    assert (tmp_path / "tests" / "test_calc.py").exists()
    # A file that would shadow a standard module for the check's command is flagged and never written.
    assert not (tmp_path / "json.py").exists()
    assert [f["kind"] for f in result["static"]] == ["shadowed-module"]
    assert "report" not in result and "witness" not in result


def test_a_straggler_of_the_test_run_is_killed_before_the_report_is_read(tmp_path):
    # A test that leaves a detached process behind, which would otherwise outlive the run.
    test = (
        "import subprocess, sys\n\n\n"
        "def test_leaves_a_process():\n"
        "    subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], start_new_session=True)\n"
    )
    result = _run(tmp_path, "verify", {"calc.py": "X = 1\n"}, {"tests/test_leave.py": test}, ["tests/test_leave.py"])
    assert result["subreaper"] is True
    assert result["stragglers"] >= 1
    assert result["report"] is not None and 'name="test_leaves_a_process"' in result["report"]
    assert 'file="tests/test_leave.py"' in result["report"]

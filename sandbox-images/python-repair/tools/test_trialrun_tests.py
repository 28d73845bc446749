"""Unit tests for trialrun_tests.py (run with: python3 -m pytest this_file)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import trialrun_tests as tt  # noqa: E402

TOOL = Path(tt.__file__).resolve()

MODULE = """def clamp(x, low, high):
    if x < low:
        return low
    if x > high:
        return low
    return x


def double(x):
    return 2 * x
"""

TESTS = """from clamp import clamp, double


def test_inside():
    assert clamp(5, 0, 10) == 5


def test_above():
    assert clamp(15, 0, 10) == 10


def test_double():
    assert double(2) == 4
"""


def run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(TOOL), *args], cwd=root, capture_output=True, text=True, check=False)


def spectrum(stdout: str) -> dict[str, list[int]]:
    last = stdout.rstrip("\n").split("\n")[-1]
    assert last.startswith(tt.SPECTRUM_PREFIX), last
    return json.loads(last[len(tt.SPECTRUM_PREFIX):])["lines"]


def test_counts_the_failing_and_the_passing_tests_that_ran_each_module_line(tmp_path: Path) -> None:
    (tmp_path / "clamp.py").write_text(MODULE)
    (tmp_path / "test_clamp.py").write_text(TESTS)
    done = run(tmp_path, "clamp.py", "test_clamp.py")
    assert done.returncode == 1
    assert "1 failed, 2 passed" in done.stdout
    assert "FAILED test_clamp.py::test_above" in done.stdout
    # test_above fails through lines 2, 4, 5; test_inside passes through 2, 4, 6; test_double through 10.
    assert spectrum(done.stdout) == {"2": [1, 1], "4": [1, 1], "5": [1, 0], "6": [0, 1], "10": [0, 1]}


def test_a_module_that_does_not_import_fails_every_test_and_runs_no_line(tmp_path: Path) -> None:
    (tmp_path / "clamp.py").write_text("def clamp(:\n")
    (tmp_path / "test_clamp.py").write_text(TESTS)
    done = run(tmp_path, "clamp.py", "test_clamp.py")
    assert done.returncode != 0
    assert spectrum(done.stdout) == {}


def test_all_passing_gives_status_0(tmp_path: Path) -> None:
    (tmp_path / "clamp.py").write_text(MODULE.replace("        return low\n    return x", "        return high\n    return x"))
    (tmp_path / "test_clamp.py").write_text(TESTS)
    done = run(tmp_path, "clamp.py", "test_clamp.py")
    assert done.returncode == 0, done.stdout
    assert spectrum(done.stdout)["5"] == [0, 1]


def test_without_arguments_it_says_how_to_call_it(tmp_path: Path) -> None:
    done = run(tmp_path)
    assert done.returncode == 2
    assert "usage" in done.stderr

"""Unit tests for trialrun_search.py (run with: python3 -m pytest this_file)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import trialrun_search as ts  # noqa: E402

TOOL = Path(ts.__file__).resolve()


def run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(TOOL), *args], cwd=root, capture_output=True, text=True, check=False)


def make_tree(root: Path) -> None:
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "pkg" / "core.py").write_text("def total(xs):\n    return sum(xs)\n")
    (root / "pkg" / "sub" / "deep.py").write_text("TOTAL = 3\n")
    (root / "README.md").write_text("total docs\n")
    (root / "binary.dat").write_bytes(b"\xff\xfe total")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("total\n")


def test_matches_with_paths_and_lines(tmp_path: Path) -> None:
    make_tree(tmp_path)
    result = run(tmp_path, "total")
    assert result.returncode == 0
    assert result.stdout.splitlines() == ["README.md:1:total docs", "pkg/core.py:1:def total(xs):"]


def test_path_glob_crosses_folders_with_double_star(tmp_path: Path) -> None:
    make_tree(tmp_path)
    assert run(tmp_path, "(?i)total", "pkg/**/*.py").stdout.splitlines() == ["pkg/core.py:1:def total(xs):", "pkg/sub/deep.py:1:TOTAL = 3"]
    assert run(tmp_path, "(?i)total", "pkg/*.py").stdout.splitlines() == ["pkg/core.py:1:def total(xs):"]


def test_no_match_is_status_1_and_a_bad_pattern_status_2(tmp_path: Path) -> None:
    make_tree(tmp_path)
    assert run(tmp_path, "nowhere").returncode == 1
    bad = run(tmp_path, "(unclosed")
    assert bad.returncode == 2
    assert "not a valid regular expression" in bad.stderr


def test_output_is_capped(tmp_path: Path) -> None:
    (tmp_path / "many.txt").write_text("hit\n" * (ts.MAX_MATCHES + 5))
    lines = run(tmp_path, "hit").stdout.splitlines()
    assert len(lines) == ts.MAX_MATCHES + 1
    assert lines[-1].startswith("... 5 more matching lines")

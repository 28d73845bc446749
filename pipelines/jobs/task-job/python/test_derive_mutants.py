"""pytest tests for derive_mutants.py's per-problem isolation (run: python3 -m pytest pipelines/jobs/task-job/python).

The edit tool lives in the sandbox image's recipe; it is imported from there, as the image does."""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
os.environ.setdefault("TRIALRUN_TOOLS_DIR", str(HERE.parents[3] / "sandbox-images" / "python-repair" / "tools"))
sys.path.insert(0, str(HERE))

import derive_mutants  # noqa: E402

GOOD = {
    "key": "good",
    "module": "calc.py",
    "source": "def double(x):\n    return x * 2\n",
    "visible_tests": "from calc import double\n\n\ndef test_visible():\n    assert double(2) == 4\n",
    "hidden_tests": "from calc import double\n\n\ndef test_hidden():\n    assert double(3) == 6\n    assert double(0) == 0\n",
    "kinds": ["arith-op", "off-by-one", "return-value"],
    "per_problem": 1,
    "max_candidates": 4,
    "seed": "test",
}


def test_a_problem_that_breaks_the_derivation_is_rejected_alone(tmp_path: Path) -> None:
    unwritable = {**GOOD, "key": "lone-surrogate", "source": "def double(x):\n    return '\ud800' * x\n"}
    too_deep = {**GOOD, "key": "too-deep", "source": "def double(x):\n    return " + "x + " * 100_000 + "x\n"}
    answers = [derive_mutants.derive_guarded(problem, str(tmp_path), 1, 20.0) for problem in (unwritable, too_deep, GOOD)]
    assert [answer["key"] for answer in answers] == ["lone-surrogate", "too-deep", "good"]
    assert answers[0]["status"] == "rejected"
    assert "UnicodeEncodeError" in str(answers[0]["reason"])
    assert answers[1]["status"] == "rejected"
    assert str(answers[1]["reason"]).startswith(("the derivation cannot handle this problem", "the edit tool cannot read the solution", "the original"))
    assert answers[2]["status"] == "ok"
    assert [mutant["status"] for mutant in answers[2]["mutants"]].count("valid") == 1

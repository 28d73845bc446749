#!/usr/bin/env python3
"""Run the visible tests, and say which lines of the module under repair the failing and the passing tests ran.

    trialrun_tests.py <module.py> <test file>...

Prints pytest's own output (`-q --tb=short -p no:cacheprovider`), then one last line, the line spectrum:

    trialrun-spectrum: {"lines": {"<line>": [<failing tests that ran it>, <passing tests that ran it>], ...}}

and exits with pytest's status. The environment takes the spectrum line off before it shows the output. A line
most failing tests run and few passing ones do is where a fault most likely is (spectrum-based fault
localisation); a traceback names a module line only when the exception is raised there, which a failed
assertion never is. Only the test call is traced (not collection or fixtures), and only the module's own frames.
Stdlib and pytest only (Python 3.11).
"""

from __future__ import annotations

import json
import os
import sys
from types import FrameType
from typing import Any, Callable, Optional

import pytest

SPECTRUM_PREFIX = "trialrun-spectrum: "
PYTEST_ARGS = ["-q", "--tb=short", "-p", "no:cacheprovider"]

Tracer = Callable[[FrameType, str, Any], Optional["Tracer"]]


class LineSpectrum:
    """A pytest plugin: the module lines each test's call ran, and whether the test failed."""

    def __init__(self, module: str) -> None:
        self.target = os.path.realpath(module)
        self.is_target: dict[str, bool] = {}
        self.ran: set[int] | None = None
        self.lines_by_test: dict[str, set[int]] = {}
        self.failed: dict[str, bool] = {}

    def _local(self, frame: FrameType, event: str, arg: Any) -> Tracer:
        if event == "line" and self.ran is not None:
            self.ran.add(frame.f_lineno)
        return self._local

    def _global(self, frame: FrameType, event: str, arg: Any) -> Optional[Tracer]:
        filename = frame.f_code.co_filename
        mine = self.is_target.get(filename)
        if mine is None:
            mine = self.is_target[filename] = os.path.realpath(filename) == self.target
        return self._local if mine else None

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item: pytest.Item):  # noqa: ANN201 (a hook wrapper is a generator)
        self.ran = self.lines_by_test.setdefault(item.nodeid, set())
        sys.settrace(self._global)
        try:
            yield
        finally:
            sys.settrace(None)
            self.ran = None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.failed[report.nodeid] = self.failed.get(report.nodeid, False) or report.failed
        if report.failed:
            self.lines_by_test.setdefault(report.nodeid, set())

    def spectrum(self) -> dict[str, list[int]]:
        counts: dict[int, list[int]] = {}
        for test, lines in self.lines_by_test.items():
            column = 0 if self.failed.get(test, False) else 1
            for line in lines:
                counts.setdefault(line, [0, 0])[column] += 1
        return {str(line): counts[line] for line in sorted(counts)}


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: trialrun_tests.py <module.py> <test file>...", file=sys.stderr)
        return 2
    plugin = LineSpectrum(argv[0])
    status = int(pytest.main([*PYTEST_ARGS, *argv[1:]], plugins=[plugin]))
    sys.stdout.flush()
    print(SPECTRUM_PREFIX + json.dumps({"lines": plugin.spectrum()}, separators=(",", ":")))
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""Derive program-repair tasks from correct code: mutate, then prove each mutant is a real bug.

Runs inside a python-repair sandbox, next to the environment's edit tool (/opt/trialrun/trialrun_repair.py),
so the mutations are exactly the single-site edits an agent can list and apply. Reads one JSON request on
stdin and prints one JSON answer on stdout:

    {"timeout_s": 5, "runs": 2, "problems": [{"key": "...", "module": "f.py", "source": "...",
      "visible_tests": "...", "hidden_tests": "...", "kinds": ["compare-op", ...],
      "per_problem": 4, "max_candidates": 12, "seed": "..."}]}
  ->
    {"problems": [{"key": "...", "status": "ok" | "rejected", "reason": "...", "candidates": 57,
      "mutants": [{"edit": {...}, "source": "...", "status": "valid" | "equivalent" | "flaky" | "slow",
                   "reason": "...", "failed_hidden": ["test_case_03"], "failed_visible": [...]}]}]}

For every problem the original must pass every visible and hidden test in every run; otherwise the whole
problem is rejected (its tests are broken, flaky or slow). Candidate edits are taken round-robin over the
edit kinds (in a seeded order within a kind) until `per_problem` mutants are valid or `max_candidates` were
tried. A mutant is valid when every run fails the same, non-empty set of hidden tests; one that passes
every test in every run is an equivalent mutant, one whose runs disagree is flaky, one that runs past the
timeout is slow (for mutants the timeout shrinks to 10x the original's slowest run, at least 2 s, as a
mutant that slow is stuck). Each run is a fresh forked process (pytest imported once, in the parent), killed with its
whole process group at the timeout.
"""

from __future__ import annotations

import hashlib
import json
import os
import select
import shutil
import signal
import sys
import time

sys.path.insert(0, os.environ.get("TRIALRUN_TOOLS_DIR", "/opt/trialrun"))

import pytest  # noqa: E402  (imported once; every forked run reuses it)
import trialrun_repair as repair_tool  # noqa: E402

VISIBLE = "test_visible.py"
MIN_MUTANT_TIMEOUT_S = 2.0
MUTANT_SLOWDOWN = 10.0
HIDDEN = "test_hidden.py"


class _Outcomes:
    """pytest plugin: the outcome of every test, collection errors included."""

    def __init__(self) -> None:
        self.outcomes: dict[str, str] = {}

    def pytest_runtest_logreport(self, report) -> None:  # noqa: ANN001 (pytest's TestReport)
        if report.failed:
            self.outcomes[report.nodeid] = "failed"
        elif report.when == "call":
            self.outcomes.setdefault(report.nodeid, "skipped" if report.skipped else "passed")
        elif report.skipped:
            self.outcomes.setdefault(report.nodeid, "skipped")

    def pytest_collectreport(self, report) -> None:  # noqa: ANN001
        if report.failed:
            self.outcomes[f"{report.nodeid or '<session>'}::<collection>"] = "failed"


def run_once(workdir: str, timeout_s: float) -> dict[str, object]:
    """One pytest session over both test files in a forked child; {"status": "ran", "outcomes": {...}} or a timeout."""
    started = time.monotonic()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(read_end)
        os.setsid()  # its own process group, so a timeout kills whatever the code under test spawned
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        os.chdir(workdir)
        collector = _Outcomes()
        try:
            code = int(pytest.main(["-q", "-p", "no:cacheprovider", "-p", "no:randomly", VISIBLE, HIDDEN], plugins=[collector]))
            payload = json.dumps({"code": code, "outcomes": collector.outcomes})
        except BaseException as exc:  # noqa: BLE001 (anything the code under test raises at import)
            payload = json.dumps({"code": -1, "outcomes": collector.outcomes, "crash": repr(exc)[:500]})
        data = payload.encode()
        while data:
            data = data[os.write(write_end, data):]
        os._exit(0)
    os.close(write_end)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    timed_out = False
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            break
        ready, _, _ = select.select([read_end], [], [], left)
        if not ready:
            continue
        chunk = os.read(read_end, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(read_end)
    if timed_out:
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    os.waitpid(pid, 0)
    if timed_out:
        return {"status": "timeout"}
    try:
        result = json.loads(b"".join(chunks) or b"{}")
    except ValueError:
        return {"status": "crashed", "reason": "the test run ended without a result"}
    if "code" not in result:
        return {"status": "crashed", "reason": "the test run ended without a result (killed?)"}
    return {"status": "ran", "seconds": time.monotonic() - started, **result}


def run_until_slow(workdir: str, runs: int, timeout_s: float) -> list[dict[str, object]]:
    """Up to `runs` runs; stops at the first timeout, which already decides the verdict."""
    results: list[dict[str, object]] = []
    for _ in range(runs):
        results.append(run_once(workdir, timeout_s))
        if results[-1]["status"] == "timeout":
            break
    return results


def failing(run: dict[str, object]) -> list[str]:
    outcomes: dict[str, str] = run.get("outcomes", {})  # type: ignore[assignment]
    return sorted(node for node, outcome in outcomes.items() if outcome != "passed")


def prepare(workdir: str, module: str, source: str, visible: str, hidden: str) -> None:
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    for name, text in ((module, source), (VISIBLE, visible), (HIDDEN, hidden)):
        with open(os.path.join(workdir, name), "w", encoding="utf-8") as handle:
            handle.write(text)


def judge_original(runs: list[dict[str, object]], expected: int) -> str | None:
    """Why the original is unusable, or None when it passes every test in every run."""
    for index, run in enumerate(runs):
        if run["status"] == "timeout":
            return f"slow: the original's tests ran past the timeout (run {index + 1})"
        if run["status"] != "ran":
            return f"the original's test run crashed: {run.get('reason')}"
        failed = failing(run)
        if failed:
            return f"the original fails {len(failed)} test(s), e.g. {failed[0]} (run {index + 1}); the tests or the solution are wrong"
        if "crash" in run:
            return f"pytest crashed on the original: {run['crash']}"
        if len(run.get("outcomes", {})) != expected:  # type: ignore[arg-type]
            return f"only {len(run.get('outcomes', {}))} of {expected} tests ran on the original"  # type: ignore[arg-type]
    return None


def judge_mutant(runs: list[dict[str, object]]) -> tuple[str, str | None, list[str]]:
    if any(run["status"] == "timeout" for run in runs):
        return "slow", "slow: the tests ran past the timeout on the mutant (an endless loop or a very slow path)", []
    crashed = [run for run in runs if run["status"] != "ran"]
    if crashed:
        return "slow", f"the mutant's test run crashed: {crashed[0].get('reason')}", []
    failed = [failing(run) for run in runs]
    if all(not f for f in failed):
        return "equivalent", "equivalent mutant: it passes every visible and hidden test", []
    if any(f != failed[0] for f in failed):
        return "flaky", "flaky: the mutant's runs failed different tests (" + " / ".join(",".join(f) or "none" for f in failed) + ")", []
    if not any(node.startswith(HIDDEN) for node in failed[0]):
        return "equivalent", "no hidden test fails on the mutant (only visible ones)", []
    return "valid", None, failed[0]


def ordered_candidates(source: str, kinds: list[str], key: str, seed: str) -> list[dict[str, object]]:
    """Candidate edits round-robin over kinds (in `kinds` order), each kind in a seeded pseudo-random order."""
    by_kind: dict[str, list[dict[str, object]]] = {kind: [] for kind in kinds}
    for edit in repair_tool.find_edits(source):
        if edit["kind"] in by_kind:
            by_kind[str(edit["kind"])].append(edit)

    def rank(edit: dict[str, object]) -> str:
        signature = f"{seed}|{key}|{edit['line']}:{edit['col']}|{edit['kind']}|{edit['after']}"
        return hashlib.sha256(signature.encode()).hexdigest()

    queues = [sorted(edits, key=rank) for edits in by_kind.values()]
    ordered: list[dict[str, object]] = []
    while any(queues):
        for queue in queues:
            if queue:
                ordered.append(queue.pop(0))
    return ordered


def derive(problem: dict[str, object], root: str, runs: int, timeout_s: float) -> dict[str, object]:
    key = str(problem["key"])
    module = str(problem["module"])
    source = str(problem["source"])
    visible = str(problem["visible_tests"])
    hidden = str(problem["hidden_tests"])
    workdir = os.path.join(root, hashlib.sha256(key.encode()).hexdigest()[:16])
    prepare(workdir, module, source, visible, hidden)
    original_runs = run_until_slow(workdir, runs, timeout_s)
    expected = max((len(run.get("outcomes", {})) for run in original_runs), default=0)  # type: ignore[arg-type]
    problem_reason = judge_original(original_runs, expected)
    if problem_reason is not None:
        return {"key": key, "status": "rejected", "reason": problem_reason, "candidates": 0, "mutants": []}
    try:
        candidates = ordered_candidates(source, list(problem["kinds"]), key, str(problem["seed"]))  # type: ignore[arg-type]
    except repair_tool.ToolError as exc:
        return {"key": key, "status": "rejected", "reason": f"the edit tool cannot read the solution: {exc}", "candidates": 0, "mutants": []}
    # A mutant that takes far longer than the original is stuck (usually an endless loop): waiting for the
    # full timeout on each would dominate the job's time without changing any verdict.
    slowest = max(float(run.get("seconds", timeout_s)) for run in original_runs)  # type: ignore[arg-type]
    mutant_timeout_s = min(timeout_s, max(MIN_MUTANT_TIMEOUT_S, MUTANT_SLOWDOWN * slowest))
    mutants: list[dict[str, object]] = []
    valid = 0
    for edit in candidates[: int(problem["max_candidates"])]:  # type: ignore[arg-type]
        if valid >= int(problem["per_problem"]):  # type: ignore[arg-type]
            break
        mutant_source = repair_tool.apply_edit(source, edit)
        prepare(workdir, module, mutant_source, visible, hidden)
        status, reason, failed = judge_mutant(run_until_slow(workdir, runs, mutant_timeout_s))
        valid += status == "valid"
        mutants.append({
            "edit": edit,
            "source": mutant_source,
            "status": status,
            "reason": reason,
            "failed_hidden": [node.split("::", 1)[1] for node in failed if node.startswith(HIDDEN)],
            "failed_visible": [node.split("::", 1)[1] for node in failed if node.startswith(VISIBLE)],
        })
    shutil.rmtree(workdir, ignore_errors=True)
    return {"key": key, "status": "ok", "reason": None, "candidates": len(candidates), "mutants": mutants}


def derive_guarded(problem: dict[str, object], root: str, runs: int, timeout_s: float) -> dict[str, object]:
    """derive(), with whatever one problem's content makes it raise (code nested too deep for the edit tool's
    ast walk, text that cannot be written as UTF-8) turned into that problem's rejection, so the problems
    batched with it are still derived."""
    try:
        return derive(problem, root, runs, timeout_s)
    except Exception as exc:  # noqa: BLE001 (a problem is data; nothing in it may end the batch)
        reason = f"the derivation cannot handle this problem: {type(exc).__name__}: {str(exc)[:300]}"
        return {"key": str(problem.get("key")), "status": "rejected", "reason": reason, "candidates": 0, "mutants": []}


def main() -> int:
    request = json.load(sys.stdin)
    root = os.path.join(os.environ.get("TMPDIR", "/tmp"), "trialrun-derive")
    answers = [derive_guarded(problem, root, int(request["runs"]), float(request["timeout_s"])) for problem in request["problems"]]
    sys.stdout.write(json.dumps({"problems": answers}))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())

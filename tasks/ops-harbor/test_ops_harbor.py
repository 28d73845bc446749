"""The Python checkers of the ops-harbor set (systemd-unit and cron-schedule): each accepts the file its task's
solve.sh writes and rejects the starting file, naming what is wrong. Run with: python3 -m pytest tasks/ops-harbor
(the whole set, in sandboxes: trialrun verify calibrate tasks/ops-harbor/job.yaml)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def solved(task: str, tmp_path: Path) -> Path:
    """A copy of the task's starting files with its solve.sh run over them."""
    workspace = tmp_path / "workspace"
    shutil.copytree(HERE / task / "environment" / "workspace", workspace)
    subprocess.run(["bash", str(HERE / task / "solution" / "solve.sh")], cwd=workspace, check=True)
    return workspace


def check(task: str, script: str, target: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(HERE / task / "tests" / script), str(target)], capture_output=True, text=True, check=False)


@pytest.mark.parametrize(("task", "script", "name"), [("systemd-unit", "check_unit.py", "worker.service"), ("cron-schedule", "check_cron.py", "crontab.txt")])
def test_checker_accepts_the_solution_and_rejects_the_start(task: str, script: str, name: str, tmp_path: Path) -> None:
    assert check(task, script, solved(task, tmp_path) / name).returncode == 0
    start = check(task, script, HERE / task / "environment" / "workspace" / name)
    assert start.returncode == 1
    assert start.stdout.strip(), "the checker names what is wrong"


def test_unit_checker_names_each_unmet_requirement(tmp_path: Path) -> None:
    unit = solved("systemd-unit", tmp_path) / "worker.service"
    unit.write_text(unit.read_text().replace("User=worker", "User=root").replace("Restart=on-failure", "Restart=always"))
    result = check("systemd-unit", "check_unit.py", unit)
    assert result.returncode == 1
    assert "[Service] User must be worker" in result.stdout
    assert "[Service] Restart must be on-failure" in result.stdout


@pytest.mark.parametrize(
    ("report_line", "ok"),
    [
        ("0 9 * * 1-5 /usr/local/bin/report.sh >> /var/log/cron-jobs.log 2>&1", True),
        ("0 9 * * 1,2,3,4,5 /usr/local/bin/report.sh >>/var/log/cron-jobs.log 2>&1", True),
        ("0 9 * * 0-4 /usr/local/bin/report.sh >> /var/log/cron-jobs.log 2>&1", False),
        ("0 9 * * * /usr/local/bin/report.sh >> /var/log/cron-jobs.log 2>&1", False),
        ("*/30 9 * * 1-5 /usr/local/bin/report.sh >> /var/log/cron-jobs.log 2>&1", False),
        ("0 9 * * 1-5 /usr/local/bin/report.sh > /var/log/cron-jobs.log 2>&1", False),
    ],
)
def test_cron_checker_judges_schedules_by_when_they_fire(report_line: str, ok: bool, tmp_path: Path) -> None:
    crontab = tmp_path / "crontab.txt"
    crontab.write_text(f"30 2 * * * /usr/local/bin/backup.sh >> /var/log/cron-jobs.log 2>&1\n{report_line}\n")
    assert (check("cron-schedule", "check_cron.py", crontab).returncode == 0) is ok

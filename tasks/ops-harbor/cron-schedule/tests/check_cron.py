"""Checks crontab.txt: the jobs' schedules (by the times they fire in one week) and their output redirection."""
import sys

WEEK = [(day, hour, minute) for day in range(7) for hour in range(24) for minute in range(60)]  # day 0 = Sunday


def field_matches(field: str, value: int, low: int, high: int) -> bool:
    for part in field.split(","):
        step = 1
        if "/" in part:
            part, step_text = part.split("/")
            step = int(step_text)
        if part == "*":
            start, end = low, high
        elif "-" in part:
            start, end = (int(x) for x in part.split("-"))
        else:
            start = end = int(part)
        if start <= value <= end and (value - start) % step == 0:
            return True
    return False


def fires(fields: list, day: int, hour: int, minute: int) -> bool:
    dow = fields[4].replace("7", "0") if fields[4] != "*" else "*"
    return field_matches(fields[0], minute, 0, 59) and field_matches(fields[1], hour, 0, 23) and field_matches(dow, day, 0, 6) and fields[2] == "*" and fields[3] == "*"


def main(path: str) -> int:
    jobs = {}
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.strip() and not line.lstrip().startswith("#"):
                parts = line.split()
                jobs[parts[5]] = (parts[:5], " ".join(parts[6:]))
    want = {
        "/usr/local/bin/backup.sh": {(day, 2, 30) for day in range(7)},
        "/usr/local/bin/report.sh": {(day, 9, 0) for day in range(1, 6)},
    }
    problems = [] if set(jobs) == set(want) else [f"jobs are {sorted(jobs)}, want {sorted(want)}"]
    for command, times in want.items():
        if command not in jobs:
            continue
        fields, redirect = jobs[command]
        fired = {t for t in WEEK if fires(fields, *t)}
        if fired != times:
            problems.append(f"{command} fires at {len(fired)} times a week, not the {len(times)} wanted")
        if redirect.replace(" ", "") != ">>/var/log/cron-jobs.log2>&1":
            problems.append(f"{command} output goes {redirect!r}")
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

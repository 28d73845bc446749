"""Checks worker.service against the task's requirements; exits 1 naming each unmet one."""
import configparser
import sys


def main(path: str) -> int:
    parser = configparser.ConfigParser(interpolation=None, strict=True)
    parser.optionxform = str  # systemd keys are case-sensitive
    with open(path, encoding="utf-8") as handle:
        parser.read_file(handle)
    problems = []

    def want(section: str, key: str, check, what: str) -> None:
        value = parser.get(section, key, fallback=None)
        if value is None or not check(value.strip()):
            problems.append(f"[{section}] {key} must be {what}, is {value!r}")

    want("Unit", "Description", bool, "set")
    want("Unit", "After", lambda v: "network-online.target" in v.split(), "after network-online.target")
    want("Unit", "Wants", lambda v: "network-online.target" in v.split(), "wanting network-online.target")
    want("Service", "ExecStart", lambda v: v == "/opt/worker/bin/worker --queue jobs", "/opt/worker/bin/worker --queue jobs")
    want("Service", "User", lambda v: v == "worker", "worker")
    want("Service", "Restart", lambda v: v == "on-failure", "on-failure")
    want("Service", "RestartSec", lambda v: v in ("5", "5s"), "5 seconds")
    want("Install", "WantedBy", lambda v: "multi-user.target" in v.split(), "multi-user.target")
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

"""Validates ATIF files with the harbor package's own models and checker, not a copy of its schema.

Run by test/integration/atif.test.ts in harbor's cached virtualenv (stack/harbor.ts). For each file argument:
`Trajectory.model_validate` (pydantic, unknown fields refused) and harbor's `TrajectoryValidator`. Prints one
JSON object: file -> list of errors (empty when valid), and the schema versions seen.
"""
import json
import sys

from harbor.models.trajectories import Trajectory
from harbor.utils.trajectory_validator import TrajectoryValidator
from pydantic import ValidationError


def check(path: str) -> tuple[list[str], str | None]:
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    errors: list[str] = []
    version = None
    try:
        version = Trajectory.model_validate(data).schema_version
    except ValidationError as error:
        errors.extend(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in error.errors())
    validator = TrajectoryValidator()
    if not validator.validate(path):
        errors.extend(validator.get_errors())
    return errors, version


def main(paths: list[str]) -> None:
    report = {"errors": {}, "versions": []}
    for path in paths:
        errors, version = check(path)
        report["errors"][path] = errors
        if version is not None:
            report["versions"].append(version)
    print(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1:])

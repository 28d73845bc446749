"""Request latencies from an application log, per endpoint: count, median and 95th percentile in milliseconds."""

import csv
import math
import os
import re
import sys
from collections import defaultdict

LINE = re.compile(r"^\S+ \S+ (?P<method>[A-Z]+) (?P<path>\S+) took (?P<value>\d+(?:\.\d+)?)(?P<unit>us|ms|s)$")
TO_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0}


def percentile(sorted_values, p):
    """Nearest-rank percentile: the smallest value with at least p% of the values at or below it."""
    return sorted_values[max(0, math.ceil(p / 100 * len(sorted_values)) - 1)]


def latencies(lines):
    found = defaultdict(list)
    for line in lines:
        match = LINE.match(line.strip())
        if match:
            found[f"{match['method']} {match['path']}"].append(float(match["value"]) * TO_MS[match["unit"]])
    for endpoint in sorted(found):
        values = sorted(found[endpoint])
        yield {"endpoint": endpoint, "count": len(values), "p50_ms": round(percentile(values, 50), 3), "p95_ms": round(percentile(values, 95), 3)}


def main(source, target):
    with open(source) as handle:
        rows = list(latencies(handle))
    os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
    with open(target, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["endpoint", "count", "p50_ms", "p95_ms"])
        writer.writeheader()
        writer.writerows(rows)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

"""Temperature readings (sensor,value,unit) in C, F or K, summarised per sensor in degrees Celsius."""

import csv
import os
import sys
from collections import defaultdict


def celsius(value, unit):
    unit = unit.strip().upper()
    if unit == "C":
        return value
    if unit == "F":
        return value - 32 * 5 / 9
    if unit == "K":
        return value + 273.15
    raise ValueError(f"unknown unit {unit!r}")


def summarise(rows):
    readings = defaultdict(list)
    for row in rows:
        readings[row["sensor"].strip()].append(celsius(float(row["value"]), row["unit"]))
    for sensor in sorted(readings):
        values = readings[sensor]
        yield {"sensor": sensor, "readings": len(values), "mean_c": round(sum(values) / len(values), 3), "min_c": round(min(values), 3), "max_c": round(max(values), 3)}


def main(source, target):
    with open(source, newline="") as handle:
        rows = list(csv.DictReader(handle))
    os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
    with open(target, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["sensor", "readings", "mean_c", "min_c", "max_c"])
        writer.writeheader()
        writer.writerows(summarise(rows))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

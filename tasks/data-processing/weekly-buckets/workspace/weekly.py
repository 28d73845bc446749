"""Counts events (timestamp,event) per ISO week in UTC: weeks start on Monday, empty weeks in the range count 0."""

import csv
import os
import sys
from collections import Counter
from datetime import datetime, timedelta


def week_start(timestamp):
    day = datetime.fromisoformat(timestamp.strip()).date()
    return day - timedelta(days=int(day.strftime("%w")))


def buckets(rows):
    counts = Counter(week_start(row["timestamp"]) for row in rows)
    if not counts:
        return []
    return [{"week_start": week.isoformat(), "events": counts[week]} for week in sorted(counts)]


def main(source, target):
    with open(source, newline="") as handle:
        rows = list(csv.DictReader(handle))
    os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
    with open(target, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["week_start", "events"])
        writer.writeheader()
        writer.writerows(buckets(rows))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

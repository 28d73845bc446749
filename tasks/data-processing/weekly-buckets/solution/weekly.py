"""Counts events (timestamp,event) per ISO week in UTC: weeks start on Monday, empty weeks in the range count 0."""

import csv
import os
import sys
from collections import Counter
from datetime import datetime, timedelta, timezone


def week_start(timestamp):
    moment = datetime.fromisoformat(timestamp.strip()).astimezone(timezone.utc)
    day = moment.date()
    return day - timedelta(days=day.weekday())


def buckets(rows):
    counts = Counter(week_start(row["timestamp"]) for row in rows)
    if not counts:
        return []
    week, last = min(counts), max(counts)
    result = []
    while week <= last:
        result.append({"week_start": week.isoformat(), "events": counts.get(week, 0)})
        week += timedelta(days=7)
    return result


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

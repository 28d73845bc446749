"""Pivots daily sales (date,product,units) into one row per month and one column per product, plus a total."""

import csv
import os
import sys
from collections import defaultdict


def pivot(rows):
    table = defaultdict(lambda: defaultdict(int))
    products = set()
    for row in rows:
        month = row["date"].strip()[:7]
        product = row["product"].strip()
        products.add(product)
        table[month][product] += int(row["units"])
    columns = sorted(products)
    lines = []
    for month in sorted(table):
        line = {"month": month, **{product: table[month][product] for product in columns}}
        line["total"] = sum(table[month].values())
        lines.append(line)
    return ["month", *columns, "total"], lines


def main(source, target):
    with open(source, newline="") as handle:
        rows = list(csv.DictReader(handle))
    header, lines = pivot(rows)
    os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
    with open(target, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=header)
        writer.writeheader()
        writer.writerows(lines)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

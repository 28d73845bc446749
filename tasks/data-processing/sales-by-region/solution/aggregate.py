"""Revenue per region: reads sales lines (order_id,region,quantity,unit_price) and writes one row per region."""

import csv
import os
import sys
from collections import defaultdict


def summarise(rows):
    orders = defaultdict(set)
    units = defaultdict(int)
    revenue = defaultdict(float)
    for row in rows:
        region = row["region"].strip()
        quantity = int(row["quantity"])
        orders[region].add(row["order_id"])
        units[region] += quantity
        revenue[region] += quantity * float(row["unit_price"])
    for region in sorted(orders):
        total = round(revenue[region], 2)
        yield {"region": region, "orders": len(orders[region]), "units": units[region], "revenue": total, "avg_order_value": round(total / len(orders[region]), 2)}


def main(source, target):
    with open(source, newline="") as handle:
        rows = list(csv.DictReader(handle))
    os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
    with open(target, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["region", "orders", "units", "revenue", "avg_order_value"])
        writer.writeheader()
        writer.writerows(summarise(rows))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

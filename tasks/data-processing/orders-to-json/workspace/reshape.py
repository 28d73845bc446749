"""Reshapes order lines (order_id,customer,sku,quantity,unit_price) into one JSON document per customer."""

import csv
import json
import os
import sys


def reshape(rows):
    customers = {}
    for row in rows:
        orders = customers.setdefault(row["customer"].strip(), {})
        orders[row["order_id"]] = {"order_id": row["order_id"], "lines": 1, "total": int(row["quantity"]) * float(row["unit_price"])}
    document = []
    for name in sorted(customers):
        orders = [customers[name][order_id] for order_id in sorted(customers[name])]
        for order in orders:
            order["total"] = round(order["total"], 2)
        document.append({"customer": name, "orders": orders, "total": round(sum(order["total"] for order in orders), 2)})
    return {"customers": document}


def main(source, target):
    with open(source, newline="") as handle:
        rows = list(csv.DictReader(handle))
    os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
    with open(target, "w") as handle:
        json.dump(reshape(rows), handle, indent=2)
        handle.write("\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

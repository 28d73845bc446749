"""Joins orders (order_id,customer_id,amount) with customers (customer_id,name,country): every order is kept."""

import csv
import os
import sys

FIELDS = ["order_id", "customer_id", "name", "country", "amount"]


def read(path):
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def enrich(orders, customers):
    by_id = {row["customer_id"].strip(): row for row in customers}
    for order in orders:
        customer = by_id.get(order["customer_id"].strip())
        yield {
            "order_id": order["order_id"],
            "customer_id": order["customer_id"].strip(),
            "name": customer["name"] if customer else "unknown",
            "country": customer["country"] if customer else "",
            "amount": order["amount"],
        }


def main(orders, customers, target):
    rows = list(enrich(read(orders), read(customers)))
    os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
    with open(target, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=FIELDS)
        writer.writeheader()
        writer.writerows(rows)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])

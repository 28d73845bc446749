"""Reconciles two stock snapshots (sku,quantity): what was added, removed and changed between them, as JSON."""

import csv
import json
import os
import sys


def snapshot(path):
    with open(path, newline="") as handle:
        return {row["sku"]: row["quantity"] for row in csv.DictReader(handle)}


def changes(before, after):
    return {
        "added": [{"sku": sku, "quantity": int(after[sku])} for sku in sorted(after.keys() - before.keys())],
        "removed": [],
        "changed": [{"sku": sku, "before": int(before[sku]), "after": int(after[sku])} for sku in sorted(before.keys() & after.keys()) if before[sku] != after[sku]],
    }


def main(before, after, target):
    document = changes(snapshot(before), snapshot(after))
    os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
    with open(target, "w") as handle:
        json.dump(document, handle, indent=2)
        handle.write("\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])

"""Deduplicates contacts (email,name,signed_up): one row per email address, the earliest sign-up kept."""

import csv
import os
import sys


def normalised(email):
    return email.strip().lower()


def deduplicate(rows):
    kept = {}
    for row in rows:
        email = normalised(row["email"])
        contact = {"email": email, "name": row["name"].strip(), "signed_up": row["signed_up"].strip()}
        if email not in kept or contact["signed_up"] < kept[email]["signed_up"]:
            kept[email] = contact
    return [kept[email] for email in sorted(kept)]


def main(source, target):
    with open(source, newline="") as handle:
        rows = list(csv.DictReader(handle))
    contacts = deduplicate(rows)
    os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
    with open(target, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["email", "name", "signed_up"])
        writer.writeheader()
        writer.writerows(contacts)
    print(f"kept {len(contacts)} of {len(rows)} contacts")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

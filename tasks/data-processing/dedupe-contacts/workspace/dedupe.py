"""Deduplicates contacts (email,name,signed_up): one row per email address, the earliest sign-up kept."""

import sys


def deduplicate(rows):
    raise NotImplementedError("deduplicate contacts")


def main(source, target):
    raise NotImplementedError("read the contacts, write the deduplicated ones, print the summary line")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

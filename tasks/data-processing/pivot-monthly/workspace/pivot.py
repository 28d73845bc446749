"""Pivots daily sales (date,product,units) into one row per month and one column per product, plus a total."""

import sys


def main(source, target):
    # TODO: write the pivot table.
    pass


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

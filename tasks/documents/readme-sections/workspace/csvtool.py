"""csvtool: select, filter and sort the columns of a CSV file.

usage: csvtool.py [--select COLS] [--where COL=VALUE] [--sort COL] [--desc] FILE
"""

import argparse
import csv
import sys


def main(argv=None):
    parser = argparse.ArgumentParser(prog="csvtool", description="select, filter and sort the columns of a CSV file")
    parser.add_argument("file")
    parser.add_argument("--select", help="comma-separated columns to keep, in this order")
    parser.add_argument("--where", action="append", default=[], help="keep rows whose COL equals VALUE (repeatable)")
    parser.add_argument("--sort", help="column to sort by")
    parser.add_argument("--desc", action="store_true", help="sort in descending order")
    args = parser.parse_args(argv)
    with open(args.file, newline="") as handle:
        rows = list(csv.DictReader(handle))
    for condition in args.where:
        column, value = condition.split("=", 1)
        rows = [row for row in rows if row.get(column) == value]
    if args.sort:
        rows.sort(key=lambda row: row[args.sort], reverse=args.desc)
    columns = args.select.split(",") if args.select else (list(rows[0]) if rows else [])
    writer = csv.DictWriter(sys.stdout, fieldnames=columns, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)


if __name__ == "__main__":
    main()

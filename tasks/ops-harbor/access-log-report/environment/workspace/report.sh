#!/bin/bash
# Usage: report.sh LOG — prints "STATUS COUNT" per HTTP status of a common-log-format file, sorted by status.
awk '{ count[$8]++ } END { for (s in count) print s, count[s] }' "$1" | sort

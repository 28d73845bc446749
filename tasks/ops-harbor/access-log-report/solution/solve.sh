#!/bin/bash
cat > report.sh <<'SCRIPT'
#!/bin/bash
# Usage: report.sh LOG — prints "STATUS COUNT" per HTTP status of a common-log-format file, sorted by status.
# The status is the second-to-last field, whatever the request line holds.
awk '{ count[$(NF - 1)]++ } END { for (s in count) print s, count[s] }' "$1" | sort
SCRIPT

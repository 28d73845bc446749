#!/bin/bash
# A log whose request lines hold extra spaces (an odd path) must still be counted by status.
# Harbor reads the verdict from /logs/verifier/reward.txt only: each check must hold (set -e in the subshell).
(
  set -e
  log=$(mktemp)
  cat > "$log" <<'LOG'
1.1.1.1 - - [01/Dec/2026:10:00:00 +0000] "GET /a HTTP/1.1" 200 5
1.1.1.1 - - [01/Dec/2026:10:00:00 +0000] "GET /a%20b HTTP/1.1" 301 0
1.1.1.2 - - [01/Dec/2026:10:00:01 +0000] "GET /b HTTP/1.1" 200 7
1.1.1.3 - - [01/Dec/2026:10:00:02 +0000] "GET /c HTTP/1.1" 503 0
LOG
  [ "$(bash report.sh "$log")" = "$(printf '200 2\n301 1\n503 1')" ]
  [ "$(bash report.sh access.log)" = "$(printf '200 2\n404 1\n500 1')" ]
)
if [ $? = 0 ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt

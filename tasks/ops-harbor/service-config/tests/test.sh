#!/bin/bash
# The config must parse and satisfy every rule; jq -e exits non-zero when the expression is false or null.
# Harbor reads the verdict from /logs/verifier/reward.txt only: each check must hold (set -e in the subshell).
(
  set -e
  jq -e '.name == "billing-api"
    and .port == 8080
    and (.workers | type == "number" and . >= 2)
    and (.log_level | IN("info", "warn", "error"))
    and .upstreams == ["db-1:5432", "db-2:5432"]' service.json
)
if [ $? = 0 ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt

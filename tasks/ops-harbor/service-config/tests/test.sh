#!/bin/bash
# The config must parse and satisfy every rule; jq -e exits non-zero when the expression is false or null.
jq -e '.name == "billing-api"
  and .port == 8080
  and (.workers | type == "number" and . >= 2)
  and (.log_level | IN("info", "warn", "error"))
  and .upstreams == ["db-1:5432", "db-2:5432"]' service.json

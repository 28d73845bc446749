#!/bin/bash
cat > active.jq <<'JQ'
# Emails of active users that hold a role, lower-cased and sorted.
map(select(.active == true and ((.roles // []) | length > 0))) | map(.email | ascii_downcase) | sort | .[]
JQ

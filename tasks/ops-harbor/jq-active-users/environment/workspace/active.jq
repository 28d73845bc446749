# Emails of active users that hold a role, lower-cased and sorted.
map(select(.active or (.roles | length > 0))) | map(.email) | sort | .[]

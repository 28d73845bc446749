#!/bin/bash
# Runs the filter on the task's data and on a fixture with a missing roles key and a non-boolean flag.
tests=$(dirname "$0")
ok=1
[ "$(jq -r -f active.jq users.json)" = "$(printf 'ann@example.com\ndee@example.com')" ] || ok=0
[ "$(jq -r -f active.jq "$tests/fixture.json")" = "$(printf 'amy@example.com\nzed@example.com')" ] || ok=0
if [ "$ok" = 1 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi

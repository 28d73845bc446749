#!/bin/bash
ok=1
[ "$(bash lookup.sh web-1)" = 10.1.0.11 ] || ok=0
[ "$(bash lookup.sh db-1)" = 10.2.0.5 ] || ok=0
err=$(bash lookup.sh nope 2>&1 >/dev/null); status=$?
[ "$status" = 2 ] && [ "$err" = "unknown host nope" ] || ok=0
[ -z "$(bash lookup.sh name 2>/dev/null)" ] || ok=0
if [ "$ok" = 1 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi

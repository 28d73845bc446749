#!/bin/bash
tests=$(dirname "$0")
ok=1
[ "$(node total.js orders.csv)" = 15.00 ] || ok=0
[ "$(node total.js "$tests/reordered.csv")" = 3.30 ] || ok=0
if [ "$ok" = 1 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi

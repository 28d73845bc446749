#!/bin/bash
ok=1
python3 "$(dirname "$0")/check_cron.py" crontab.txt || ok=0
if [ "$ok" = 1 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi

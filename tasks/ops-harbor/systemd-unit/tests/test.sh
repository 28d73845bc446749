#!/bin/bash
# The unit must parse as an INI file and meet every requirement; the checker's exit status is the verdict.
# Harbor reads the verdict from /logs/verifier/reward.txt only: each check must hold (set -e in the subshell).
(
  set -e
  python3 "$(dirname "$0")/check_unit.py" worker.service
)
if [ $? = 0 ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt

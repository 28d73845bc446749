#!/bin/bash
# Builds twice (the second must succeed too), checks the output, then checks that clean removes it.
# Harbor reads the verdict from /logs/verifier/reward.txt only: each check must hold (set -e in the subshell).
(
  set -e
  make -s clean
  make -s
  make -s
  [ "$(cat build/site.txt)" = "$(printf 'header\nbody\nfooter')" ]
  make -s clean
  [ ! -e build ]
)
if [ $? = 0 ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt

#!/bin/bash
# Rotates a folder with a full set of old logs twice and checks every file's content.
# Harbor reads the verdict from /logs/verifier/reward.txt only: each check must hold (set -e in the subshell).
(
  set -e
  dir=$(mktemp -d)
  for n in 1 2 3; do echo "old $n" > "$dir/app.log.$n"; done
  echo current > "$dir/app.log"
  bash rotate.sh "$dir" 3
  [ "$(cat "$dir/app.log.1")" = current ]
  [ "$(cat "$dir/app.log.2")" = "old 1" ]
  [ "$(cat "$dir/app.log.3")" = "old 2" ]
  [ ! -e "$dir/app.log.4" ]
  [ -f "$dir/app.log" ] && [ ! -s "$dir/app.log" ]
  echo newer > "$dir/app.log"
  bash rotate.sh "$dir" 3
  [ "$(cat "$dir/app.log.1")" = newer ]
  [ "$(cat "$dir/app.log.2")" = current ]
  [ "$(cat "$dir/app.log.3")" = "old 1" ]
  [ "$(ls "$dir" | wc -l)" = 4 ]
)
if [ $? = 0 ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt

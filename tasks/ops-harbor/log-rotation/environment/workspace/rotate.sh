#!/bin/bash
# Usage: rotate.sh DIR KEEP — rotates DIR/app.log, keeping KEEP rotated files.
dir=$1
keep=$2
for n in $(seq 1 "$keep"); do
  if [ -f "$dir/app.log.$n" ]; then
    mv "$dir/app.log.$n" "$dir/app.log.$((n + 1))"
  fi
done
mv "$dir/app.log" "$dir/app.log.1"
touch "$dir/app.log"

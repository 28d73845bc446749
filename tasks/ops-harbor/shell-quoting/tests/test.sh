#!/bin/bash
# Builds a folder with plain and spaced names and compares the script's output with the expected listing.
set -u
fixture=$(mktemp -d)
printf 'a\nb\n' > "$fixture/plain.txt"
printf 'one\ntwo\nthree\n' > "$fixture/with space.txt"
printf 'x\n' > "$fixture/two  spaces.log"
mkdir "$fixture/sub dir"
expected=$(printf 'plain.txt\t2\ntwo  spaces.log\t1\nwith space.txt\t3\ntotal\t6')
actual=$(bash count_lines.sh "$fixture" 2>&1)
if [ "$actual" = "$expected" ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; printf 'got:\n%s\n' "$actual"; fi

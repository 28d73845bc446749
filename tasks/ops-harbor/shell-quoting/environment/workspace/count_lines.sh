#!/bin/bash
# Usage: count_lines.sh DIR — prints NAME<TAB>LINES for every regular file in DIR, sorted, then total<TAB>N.
dir=$1
total=0
for file in $(ls "$dir" | sort); do
  path=$dir/$file
  [ -f $path ] || continue
  lines=$(wc -l < $path)
  printf '%s\t%s\n' "$file" "$lines"
  total=$((total + lines))
done
printf 'total\t%s\n' "$total"

#!/bin/bash
# Iterate with a glob instead of word-split `ls` output, and quote every expansion.
cat > count_lines.sh <<'SCRIPT'
#!/bin/bash
# Usage: count_lines.sh DIR — prints NAME<TAB>LINES for every regular file in DIR, sorted, then total<TAB>N.
dir=$1
total=0
for path in "$dir"/*; do
  [ -f "$path" ] || continue
  file=${path##*/}
  lines=$(wc -l < "$path")
  printf '%s\t%s\n' "$file" "$lines"
  total=$((total + lines))
done
printf 'total\t%s\n' "$total"
SCRIPT

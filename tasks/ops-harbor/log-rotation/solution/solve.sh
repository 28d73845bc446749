#!/bin/bash
cat > rotate.sh <<'SCRIPT'
#!/bin/bash
# Usage: rotate.sh DIR KEEP — rotates DIR/app.log, keeping KEEP rotated files.
dir=$1
keep=$2
rm -f "$dir/app.log.$keep"
for n in $(seq $((keep - 1)) -1 1); do
  if [ -f "$dir/app.log.$n" ]; then
    mv "$dir/app.log.$n" "$dir/app.log.$((n + 1))"
  fi
done
mv "$dir/app.log" "$dir/app.log.1"
: > "$dir/app.log"
SCRIPT

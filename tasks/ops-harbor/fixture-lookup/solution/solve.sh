#!/bin/bash
cat > lookup.sh <<'SCRIPT'
#!/bin/bash
# Usage: lookup.sh NAME — prints NAME's IP from /opt/inventory/hosts.csv, or exits 2.
ip=$(awk -F';' -v name="$1" 'NR > 1 && $1 == name { print $2; exit }' /opt/inventory/hosts.csv)
if [ -z "$ip" ]; then
  echo "unknown host $1" >&2
  exit 2
fi
echo "$ip"
SCRIPT

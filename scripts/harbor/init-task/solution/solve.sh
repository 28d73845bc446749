#!/bin/bash
cat > words.sh <<'SCRIPT'
#!/bin/bash
# Usage: words.sh FILE — prints the number of words in FILE.
wc -w < "$1"
SCRIPT

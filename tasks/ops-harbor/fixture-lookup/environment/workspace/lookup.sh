#!/bin/bash
# Usage: lookup.sh NAME — prints NAME's IP from /opt/inventory/hosts.csv, or exits 2.
grep "$1" /opt/inventory/hosts.csv | cut -d, -f2

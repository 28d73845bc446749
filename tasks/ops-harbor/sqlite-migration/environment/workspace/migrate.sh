#!/bin/bash
# Usage: migrate.sh DB — applies migrations/*.sql in name order, each in one transaction; stops at the first error.
set -e
db=$1
for migration in migrations/*.sql; do
  { echo 'BEGIN;'; cat "$migration"; echo 'COMMIT;'; } | sqlite3 -bail "$db"
done

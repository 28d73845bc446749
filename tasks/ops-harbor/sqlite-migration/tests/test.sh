#!/bin/bash
# Migrates a fresh database, then checks the rows and that contacts is gone.
# Harbor reads the verdict from /logs/verifier/reward.txt only: each check must hold (set -e in the subshell).
(
  set -e
  db=$(mktemp -d)/app.db
  bash migrate.sh "$db"
  [ "$(sqlite3 "$db" 'SELECT id, email FROM users ORDER BY id')" = "$(printf '1|ann@example.com\n2|bob@example.com\n3|')" ]
  [ "$(sqlite3 "$db" "SELECT count(*) FROM sqlite_master WHERE name = 'contacts'")" = 0 ]
  sqlite3 "$db" "INSERT INTO users (id, name) VALUES (9, 'new')"
  [ "$(sqlite3 "$db" 'SELECT email FROM users WHERE id = 9')" = '' ]
)
if [ $? = 0 ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt

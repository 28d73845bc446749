#!/bin/bash
cat > migrations/002_user_email.sql <<'SQL'
ALTER TABLE users ADD COLUMN email TEXT NOT NULL DEFAULT '';
UPDATE users SET email = coalesce((SELECT address FROM contacts WHERE contacts.user_id = users.id), '');
DROP TABLE contacts;
SQL

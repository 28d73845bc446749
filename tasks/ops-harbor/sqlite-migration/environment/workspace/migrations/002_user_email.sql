ALTER TABLE users ADD COLUMN email TEXT NOT NULL;
UPDATE users SET email = (SELECT address FROM contact WHERE contact.user_id = users.id);
DROP TABLE contacts;

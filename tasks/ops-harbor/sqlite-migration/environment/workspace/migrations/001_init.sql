CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE contacts (user_id INTEGER NOT NULL REFERENCES users(id), address TEXT NOT NULL);
INSERT INTO users (id, name) VALUES (1, 'ann'), (2, 'bob'), (3, 'cid');
INSERT INTO contacts (user_id, address) VALUES (1, 'ann@example.com'), (2, 'bob@example.com');

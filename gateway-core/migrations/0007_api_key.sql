-- The pool key that served the row's attempt, by its name in the config (never the key);
-- NULL for a provider with a single key.
ALTER TABLE requests ADD COLUMN api_key TEXT;

-- A virtual key's further settings, as a config's gateway keys have them: the providers it
-- may use, comma-separated names (NULL: any); and its optimizer overrides, a JSON object in
-- `[[gateway_keys]].optimize`'s shape (NULL: none).
ALTER TABLE virtual_keys ADD COLUMN providers TEXT;
ALTER TABLE virtual_keys ADD COLUMN optimize TEXT;

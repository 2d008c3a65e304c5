-- Secrets the guard replaced in a request, by kind: `kind:count` joined by commas
-- (`github_token:1,env_secret:2`); NULL when none. Never a value.
ALTER TABLE requests ADD COLUMN secrets TEXT;
-- A virtual key's guard mode (`redact`, `block`, `off`); NULL follows the config.
ALTER TABLE virtual_keys ADD COLUMN guard TEXT;

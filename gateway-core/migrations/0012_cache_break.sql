-- A turn whose prompt-cache read fell short of what the session's previous turn left
-- cached: who broke the prefix (`gateway`, `client` or `provider`); NULL when nothing broke.
ALTER TABLE requests ADD COLUMN cache_break TEXT;

-- Request fields a translation left out (x-trimgate-dropped), comma-separated, NULL when
-- none; and the agent's session id (Codex's session-id, Claude Code's
-- x-claude-code-session-id), so one session's turns can be read together.
ALTER TABLE requests ADD COLUMN dropped TEXT;
ALTER TABLE requests ADD COLUMN session TEXT;

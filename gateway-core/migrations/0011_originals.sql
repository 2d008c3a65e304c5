-- Tool outputs as the client sent them, before a pass elided part of them: what a marker's
-- id (`/originals/<id>`, `trimgate show <id>`) gives back after a restart, or from another
-- replica. Rows older than `[optimize] originals_days` are deleted.
CREATE TABLE originals (
    id       TEXT PRIMARY KEY,
    kept_ms  BIGINT NOT NULL,
    pass     TEXT NOT NULL,
    original TEXT NOT NULL
);
CREATE INDEX originals_kept ON originals (kept_ms);

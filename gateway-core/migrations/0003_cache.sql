-- The response cache's entries, so they survive a restart (see cache::persist). The body
-- is the answer as the client received it (JSON or SSE text); shape and words are set
-- for entries the similar cache can answer from.
CREATE TABLE cache_entries (
    key                TEXT PRIMARY KEY,
    created_ms         BIGINT NOT NULL,
    expires_ms         BIGINT NOT NULL,
    streamed           BIGINT NOT NULL,
    model              TEXT NOT NULL,
    input_tokens       BIGINT,
    output_tokens      BIGINT,
    cache_read_tokens  BIGINT,
    cache_write_tokens BIGINT,
    reasoning_tokens   BIGINT,
    body               TEXT NOT NULL,
    shape              BIGINT,
    words              TEXT
);
CREATE INDEX cache_entries_expires ON cache_entries (expires_ms);
-- How each request went through the response cache (hit, similar, miss; NULL when the
-- cache did not apply), and what each optimizer pass did to it, in exact tokens.
ALTER TABLE requests ADD COLUMN cache TEXT;
CREATE TABLE request_passes (
    ts_ms         BIGINT NOT NULL,
    request_id    TEXT NOT NULL,
    pass          TEXT NOT NULL,
    tokens_before BIGINT NOT NULL,
    tokens_after  BIGINT NOT NULL,
    saved_usd     DOUBLE PRECISION
);
CREATE INDEX request_passes_ts ON request_passes (ts_ms);

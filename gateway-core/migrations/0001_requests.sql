-- One row per request, written off the hot path. Types are the ones SQLite and
-- PostgreSQL both read the same way.
CREATE TABLE requests (
    ts_ms            BIGINT NOT NULL,
    request_id       TEXT NOT NULL,
    dialect          TEXT NOT NULL,
    provider         TEXT,
    model_requested  TEXT,
    model_served     TEXT,
    gateway_key      TEXT,
    streamed         BIGINT NOT NULL,
    status           BIGINT NOT NULL,
    outcome          TEXT NOT NULL,
    error            TEXT,
    latency_ms       DOUBLE PRECISION NOT NULL,
    overhead_ms      DOUBLE PRECISION NOT NULL,
    input_tokens     BIGINT,
    output_tokens    BIGINT,
    cache_read_tokens  BIGINT,
    cache_write_tokens BIGINT,
    reasoning_tokens BIGINT,
    applied          TEXT NOT NULL,
    saved_tokens     BIGINT NOT NULL,
    saved_bytes      BIGINT NOT NULL
);
CREATE INDEX requests_ts ON requests (ts_ms);
CREATE INDEX requests_model_ts ON requests (model_served, ts_ms);

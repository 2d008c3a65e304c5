-- Virtual keys: what a team's clients present in server mode. Only a digest of each key is
-- kept (SHA-256, hex): a key is shown once, when it is made, and never again.
CREATE TABLE virtual_keys (
    name              TEXT PRIMARY KEY,
    digest            TEXT NOT NULL UNIQUE,
    -- The key's first characters, to tell keys apart in a listing.
    hint              TEXT NOT NULL,
    -- Model patterns the key may use, comma-separated globs; NULL: any.
    models            TEXT,
    rpm               BIGINT,
    tpm               BIGINT,
    budget_day_usd    DOUBLE PRECISION,
    budget_month_usd  DOUBLE PRECISION,
    expires_ms        BIGINT,
    created_ms        BIGINT NOT NULL,
    revoked_ms        BIGINT
);

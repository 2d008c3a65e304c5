-- Each change made through the admin API: who made it (the window on loopback, or the
-- admin key), what (method and path, never a body: bodies carry keys), when, from which
-- address, and the status it got.
CREATE TABLE admin_actions (
    at_ms   BIGINT NOT NULL,
    who     TEXT NOT NULL,
    method  TEXT NOT NULL,
    path    TEXT NOT NULL,
    status  BIGINT NOT NULL,
    addr    TEXT
);
CREATE INDEX admin_actions_at ON admin_actions (at_ms);

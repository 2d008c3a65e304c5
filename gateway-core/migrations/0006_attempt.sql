-- Which attempt of a request a row is (from 1): a request retried or sent to a fallback
-- has one row per attempt, all with its request_id; the failed ones have outcome
-- 'retried'. NULL on rows written before retries existed, and 0 when no provider was tried.
ALTER TABLE requests ADD COLUMN attempt BIGINT;

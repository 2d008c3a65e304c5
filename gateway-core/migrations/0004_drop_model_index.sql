-- No query filters on the served model: the window's totals read a time range
-- (requests_ts) and group what it finds. The index only cost each row's insert a second
-- B-tree write.
DROP INDEX IF EXISTS requests_model_ts;

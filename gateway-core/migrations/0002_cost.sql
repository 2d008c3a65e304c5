-- What each request cost and what the optimizer saved, in US dollars, from the price
-- table at write time (NULL for a model the table does not know).
ALTER TABLE requests ADD COLUMN cost_usd DOUBLE PRECISION;
ALTER TABLE requests ADD COLUMN saved_usd DOUBLE PRECISION;

-- The size of each kept output, so the table can be held within `[optimize]
-- originals_db_mib` by deleting the oldest first.
ALTER TABLE originals ADD COLUMN bytes BIGINT NOT NULL DEFAULT 0;
UPDATE originals SET bytes = length(original);

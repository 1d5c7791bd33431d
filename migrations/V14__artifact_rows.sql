-- Artifact rows per source, removed ones included (what `catalog stats` reports as
-- artifacts ever seen), kept in step by every write that inserts a row, so the
-- census sums one number per source instead of counting every artifact.
ALTER TABLE sources ADD COLUMN artifact_rows INTEGER NOT NULL DEFAULT 0;
UPDATE sources SET artifact_rows = (SELECT COUNT(*) FROM artifacts a WHERE a.source_id = sources.id);

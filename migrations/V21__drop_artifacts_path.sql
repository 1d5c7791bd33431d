-- The artifacts of a source at a path are found through the identity index
-- `(source_id, kind, path)`, one lookup per kind (`kind IN (...)` with the four
-- kinds), so the second index on `(source_id, path)` only cost every new artifact
-- one more entry in random order (and 5 MB at 100,000 artifacts).
DROP INDEX IF EXISTS artifacts_path;

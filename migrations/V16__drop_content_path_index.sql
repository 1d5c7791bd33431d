-- No query looks artifacts up by `content_path` (symlinked main files are found
-- through `artifact_links`); the index only cost every artifact insert one more
-- entry in random order. Deleting a source's artifacts uses the other indexes
-- that start with `source_id`.
DROP INDEX IF EXISTS artifacts_content_path;

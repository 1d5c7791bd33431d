-- sha256 digests for Skills over MCP (SEP-2640 hosts verify every file against
-- `sha256:<hex>` and size); blake3 stays for aam's own checks. Rows indexed before
-- this migration have NULL here: the skills surface computes the digest from the
-- git object when it serves such a file, and the next index of the artifact
-- records it.
ALTER TABLE artifact_files ADD COLUMN sha256 TEXT;  -- of the blob's bytes (hex)
ALTER TABLE artifacts ADD COLUMN main_sha256 TEXT;  -- of the main file's content (what main_size measures)

-- Every path a symlinked main file passes through on the way to its content
-- (including a missing target), so a change to any of them updates the artifact.
CREATE TABLE artifact_links (
    artifact_id  INTEGER NOT NULL REFERENCES artifacts (id) ON DELETE CASCADE,
    path         TEXT    NOT NULL,
    PRIMARY KEY (artifact_id, path)
) WITHOUT ROWID;
CREATE INDEX artifact_links_path ON artifact_links (path);
